//! Step 1 of the search pipeline, the tokenizer: words (camelCase and separator splitting, light stemming,
//! stopwords) and CJK runs (character bigrams and unigrams).

/// What the scanner found, in text order.
pub(super) enum Piece {
    /// A run of letters and digits: lowercased as a whole, and its parts split
    /// at camelCase and letter/digit boundaries (lowercased, not yet stemmed).
    Word { raw: String, parts: Vec<String> },
    /// A run of CJK characters.
    Cjk(Vec<char>),
    /// Punctuation other than a word separator: ends a phrase (no joining across).
    Break,
}

/// Chinese (Han), Japanese (kana) and Korean (Hangul) characters.
pub(super) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3005..=0x3007        // 々 〆 〇
        | 0x3400..=0x4DBF      // CJK extension A
        | 0x4E00..=0x9FFF      // CJK unified ideographs
        | 0xF900..=0xFAFF      // compatibility ideographs
        | 0x20000..=0x3134F    // extensions B..G
        | 0x3040..=0x309F      // hiragana
        | 0x30A0..=0x30FF      // katakana
        | 0x31F0..=0x31FF      // katakana phonetic extensions
        | 0xFF66..=0xFF9F      // halfwidth katakana
        | 0x1100..=0x11FF      // hangul jamo
        | 0x3130..=0x318F      // hangul compatibility jamo
        | 0xAC00..=0xD7AF      // hangul syllables
    ) && c != '\u{30FB}' // katakana middle dot is punctuation
}

/// Full-width ASCII (common in CJK text) folded to ASCII.
pub(super) fn fold_width(c: char) -> char {
    match c as u32 {
        0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFF01 + 0x21).unwrap_or(c),
        0x3000 => ' ',
        _ => c,
    }
}

/// Splits text into words and CJK runs and hands each to `f`.
pub(super) fn scan(text: &str, f: &mut impl FnMut(Piece)) {
    let mut word: Vec<char> = Vec::new();
    let mut cjk: Vec<char> = Vec::new();
    let flush_word = |word: &mut Vec<char>, f: &mut dyn FnMut(Piece)| {
        if !word.is_empty() {
            let raw: String = word.iter().flat_map(|c| c.to_lowercase()).collect();
            let parts = split_word(word);
            word.clear();
            f(Piece::Word { raw, parts });
        }
    };
    for c in text.chars().map(fold_width) {
        if is_cjk(c) {
            flush_word(&mut word, f);
            cjk.push(c);
        } else if c.is_alphanumeric() {
            if !cjk.is_empty() {
                f(Piece::Cjk(std::mem::take(&mut cjk)));
            }
            word.push(c);
        } else {
            flush_word(&mut word, f);
            if !cjk.is_empty() {
                f(Piece::Cjk(std::mem::take(&mut cjk)));
            }
            // Separators inside identifiers and prose keep a phrase going;
            // sentence punctuation ends it.
            if !(c.is_whitespace() || matches!(c, '_' | '-' | '/' | ':' | '.' | '\'' | '’')) {
                f(Piece::Break);
            }
        }
    }
    flush_word(&mut word, f);
    if !cjk.is_empty() {
        f(Piece::Cjk(cjk));
    }
}

/// Splits one alphanumeric run at camelCase (`getFile`, `HTMLParser`) and
/// letter/digit boundaries, lowercasing the parts.
pub(super) fn split_word(w: &[char]) -> Vec<String> {
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..w.len() {
        let (p, c) = (w[i - 1], w[i]);
        // `HTMLParser` splits before `P`, but a plural `URLs`, `PRs` stays whole.
        let next_lower = w.get(i + 1).is_some_and(|n| n.is_lowercase())
            && !(i + 2 == w.len() && w[i + 1] == 's');
        let boundary = (p.is_lowercase() && c.is_uppercase())
            || (p.is_uppercase() && c.is_uppercase() && next_lower)
            || (p.is_numeric() != c.is_numeric());
        if boundary {
            parts.push(w[start..i].iter().flat_map(|c| c.to_lowercase()).collect());
            start = i;
        }
    }
    parts.push(w[start..].iter().flat_map(|c| c.to_lowercase()).collect());
    parts
}

/// The index terms of `text`, in order: stemmed words without stopwords
/// (camelCase words also whole), CJK bigrams then unigrams of each CJK run.
pub(super) fn tokenize_into(text: &str, out: &mut Vec<String>) {
    scan(text, &mut |piece| match piece {
        Piece::Word { raw, parts } => {
            if parts.len() > 1 {
                let whole = stem(&raw);
                if !is_stopword(&whole) {
                    out.push(whole);
                }
            }
            for p in parts {
                let s = stem(&p);
                if !is_stopword(&s) {
                    out.push(s);
                }
            }
        }
        Piece::Cjk(run) => {
            for w in run.windows(2) {
                out.push(w.iter().collect());
            }
            for c in run {
                if !is_cjk_stopchar(c) {
                    out.push(c.to_string());
                }
            }
        }
        Piece::Break => {}
    });
}

/// [`tokenize_into`] into a fresh vector.
#[cfg(test)]
pub(super) fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokenize_into(text, &mut out);
    out
}

/// Light English stemming of a lowercase word: common irregular forms,
/// plurals, `-ing`, `-ed`, `-ly`, `-tion` and a final `e`, so `create`,
/// `creates`, `created`, `creating` and `creation` agree, and so do `wrote`
/// and `write`.
pub(super) fn stem(w: &str) -> String {
    let w = match IRREGULAR.binary_search_by(|(k, _)| (*k).cmp(w)) {
        Ok(i) => IRREGULAR[i].1,
        Err(_) => w,
    };
    if w.len() <= 3 || !w.bytes().all(|b| b.is_ascii_lowercase()) {
        return w.to_string();
    }
    let mut s = w.to_string();
    if s.ends_with("ies") || (s.ends_with("ied") && s.len() > 4) {
        s.truncate(s.len() - 3);
        s.push('y');
        return s;
    }
    if s.ends_with("es")
        && s.len() >= 5
        && (s.ends_with("ches")
            || s.ends_with("shes")
            || s.ends_with("xes")
            || s.ends_with("zes")
            || s.ends_with("sses"))
    {
        s.truncate(s.len() - 2);
    } else if s.ends_with('s') && !s.ends_with("ss") && !s.ends_with("us") && !s.ends_with("is") {
        s.truncate(s.len() - 1);
    }
    if s.ends_with("ing") && s.len() >= 6 {
        s.truncate(s.len() - 3);
        undouble(&mut s);
    } else if s.ends_with("ed") && s.len() >= 5 {
        s.truncate(s.len() - 2);
        undouble(&mut s);
    } else if s.ends_with("ically") {
        // `automatically` -> `automatic`
        s.truncate(s.len() - 4);
    } else if s.ends_with("ly") && s.len() >= 7 && !s.ends_with("ply") && !s.ends_with("ily") {
        // `recursively` -> `recursive`, `manually` -> `manual`
        s.truncate(s.len() - 2);
    } else if s.ends_with("tion") && s.len() >= 8 {
        // `creation` -> `creat` (as `create`), `navigation` -> `navigat`
        s.truncate(s.len() - 3);
    }
    // A final `e` goes, unless that leaves a stopword (`note` is not `not`).
    if s.ends_with('e') && s.len() >= 4 && !is_stopword(&s[..s.len() - 1]) {
        s.pop();
    }
    s
}

/// `stopp` -> `stop`, `committ` -> `commit`; `add`, `call`, `pass` stay.
pub(super) fn undouble(s: &mut String) {
    let b = s.as_bytes();
    let n = b.len();
    if n >= 4
        && b[n - 1] == b[n - 2]
        && !matches!(
            b[n - 1],
            b'a' | b'e' | b'i' | b'o' | b'u' | b'l' | b's' | b'z'
        )
    {
        s.pop();
    }
}

pub(super) const STOPWORDS: &[&str] = &[
    "a", "about", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by",
    "can", "could", "d", "did", "do", "doe", "does", "for", "from", "had", "has", "have", "he",
    "her", "here", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "let", "ll",
    "me", "might", "my", "not", "of", "on", "onto", "or", "our", "out", "pleas", "please", "re",
    "s", "she", "should", "so", "some", "t", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "thi", "this", "those", "to", "too", "tool", "up", "us", "use", "ve",
    "via", "wa", "want", "was", "we", "were", "what", "when", "where", "which", "who", "whose",
    "why", "will", "with", "would", "you", "your",
];

pub(super) fn is_stopword(s: &str) -> bool {
    STOPWORDS.binary_search(&s).is_ok()
}

/// Function characters that carry no meaning as unigrams (their bigrams still count).
pub(super) fn is_cjk_stopchar(c: char) -> bool {
    "的了吗呢吧啊我你他她它们请帮是在和与或把给要想个一这那有么".contains(c)
}

/// Irregular English forms, mapped to the form whose stem they share.
pub(super) const IRREGULAR: &[(&str, &str)] = &[
    ("began", "begin"),
    ("begun", "begin"),
    ("bought", "buy"),
    ("broke", "break"),
    ("broken", "break"),
    ("brought", "bring"),
    ("children", "child"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("did", "do"),
    ("done", "do"),
    ("drawn", "draw"),
    ("drew", "draw"),
    ("fell", "fall"),
    ("found", "find"),
    ("gave", "give"),
    ("given", "give"),
    ("got", "get"),
    ("gotten", "get"),
    ("hid", "hide"),
    ("hidden", "hide"),
    ("indices", "index"),
    ("kept", "keep"),
    ("knew", "know"),
    ("known", "know"),
    ("led", "lead"),
    ("logged", "login"),
    ("made", "make"),
    ("men", "man"),
    ("ran", "run"),
    ("said", "say"),
    ("saw", "see"),
    ("seen", "see"),
    ("sent", "send"),
    ("sought", "seek"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("stole", "steal"),
    ("stolen", "steal"),
    ("taken", "take"),
    ("thought", "think"),
    ("told", "tell"),
    ("took", "take"),
    ("understood", "understand"),
    ("went", "go"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn irregular_forms_are_sorted_and_unique() {
        assert!(IRREGULAR.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn stopword_list_is_sorted() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn tokenizer_splits_camel_snake_and_separators() {
        assert_eq!(
            tokenize("getFileContents"),
            ["getfilecontent", "get", "fil", "content"]
        );
        assert_eq!(
            tokenize("browser_take_screenshot"),
            ["browser", "tak", "screenshot"]
        );
        assert_eq!(
            tokenize("a-b.c/d:e f"),
            ["b", "c", "e", "f"],
            "single letters survive except stopwords `a` and `d`"
        );
        assert_eq!(tokenize("HTMLParser"), ["htmlparser", "html", "parser"]);
        assert_eq!(
            tokenize("sessionStorage"),
            ["sessionstorag", "session", "storag"]
        );
        assert_eq!(tokenize("base64"), ["base64", "bas", "64"]);
        assert_eq!(tokenize("PRs URLs"), ["prs", "url"]);
    }

    #[test]
    fn stemming_agrees_across_forms() {
        for group in [
            &["create", "creates", "created", "creating"][..],
            &["delete", "deleted", "deleting", "deletes"],
            &["file", "files"],
            &["entity", "entities"],
            &["match", "matches", "matching", "matched"],
            &["stop", "stopped", "stopping", "stops"],
            &["commit", "commits", "committed"],
            &["list", "lists", "listing", "listed"],
            &["pull", "pulls", "pulling"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.windows(2).all(|w| w[0] == w[1]),
                "{group:?} -> {stems:?}"
            );
        }
        assert_eq!(stem("add"), "add");
        assert_eq!(stem("added"), "add");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("address"), "address");
    }

    #[test]
    fn tokenizer_makes_cjk_ngrams() {
        assert_eq!(
            tokenize("搜索文件"),
            ["搜索", "索文", "文件", "搜", "索", "文", "件"]
        );
        // Mixed scripts, full-width punctuation and letters.
        let t = tokenize("查询ＩＰ地址，readFile");
        assert!(t.contains(&"ip".to_string()), "{t:?}");
        assert!(t.contains(&"地址".to_string()), "{t:?}");
        assert!(!t.iter().any(|x| x.contains('，')), "{t:?}");
        assert!(t.contains(&"fil".to_string()), "{t:?}");
        // Japanese kana and Korean hangul.
        assert!(tokenize("ファイルを検索").contains(&"ファ".to_string()));
        assert!(tokenize("파일 검색").contains(&"검색".to_string()));
    }

    #[test]
    fn stemming_handles_irregular_ly_and_tion_forms() {
        assert_eq!(stem("found"), stem("find"));
        assert_eq!(stem("children"), stem("child"));
        assert_eq!(stem("ran"), stem("run"));
        assert_eq!(stem("recursively"), stem("recursive"));
        assert_eq!(stem("automatically"), stem("automatic"));
        assert_eq!(stem("creation"), stem("create"));
        assert_eq!(stem("navigation"), stem("navigate"));
        assert_eq!(stem("apply"), "apply");
        assert_eq!(stem("action"), "action");
        // A final `e` is kept when dropping it would leave a stopword.
        assert_eq!(stem("notes"), "note");
    }
}
