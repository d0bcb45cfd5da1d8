//! Search over the tool registry (SPEC 3.3): ranks tools for a natural-language
//! query.
//!
//! The index is built once per registry. Every tool contributes four fields:
//!
//! | field | weight | text |
//! | --- | ---: | --- |
//! | name | 3.0 | the tool name, split on `_ - . / :`, spaces and camelCase |
//! | description | 1.0 | the description |
//! | parameter names | 0.6 | the keys of the schema's top-level `properties` |
//! | parameter text | 0.15 | those properties' `description` strings and string `enum` values |
//!
//! Words are lowercased, lightly stemmed (plural `s`/`es`/`ies`, `-ing`, `-ed`, a
//! final `e`) and stripped of a small stopword list. Chinese, Japanese and Korean
//! text is indexed as character unigrams and bigrams of every CJK run, so any
//! substring of two or more characters finds the text that contains it.
//!
//! Scoring is BM25F: per tool, each term's field frequencies are weighted and
//! length-normalised per field, then saturated once (`k1`), and multiplied by
//! the term's inverse document frequency over the whole registry. All of that
//! except the query weight is precomputed into the postings, so a query only
//! walks the postings of its own terms. On top of that, a tool whose name
//! tokens are largely covered by the query gets a bonus, and a query word that
//! is verbatim a (multi-word) tool name gets a larger one. A query equal to a
//! tool name (trimmed, case-insensitive) always ranks that tool first.
//!
//! Query words also pull in a small list of generic synonyms at a reduced
//! weight (`delete`/`remove`, `find`/`search`, `pr` → `pull request`, ...), and
//! adjacent query words are tried joined (`local storage` → `localstorage`).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::registry::Registry;

/// Field weights and length-normalisation strengths, in field order
/// (name, description, parameter names, parameter text).
const FIELD_WEIGHT: [f32; FIELDS] = [3.0, 1.0, 0.6, 0.15];
const FIELD_B: [f32; FIELDS] = [0.4, 0.75, 0.5, 0.75];
const FIELDS: usize = 4;
const NAME: usize = 0;
const DESCRIPTION: usize = 1;
const PARAM_NAME: usize = 2;
const PARAM_TEXT: usize = 3;
/// BM25 term-frequency saturation.
const K1: f32 = 1.2;

/// Query-term weights by origin.
const W_WORD: f32 = 1.0;
const W_CAMEL_WHOLE: f32 = 0.8;
const W_JOINED: f32 = 0.6;
const W_ABBREVIATION: f32 = 0.9;
const W_SYNONYM: f32 = 0.45;
const W_CJK_BIGRAM: f32 = 1.0;
const W_CJK_UNIGRAM: f32 = 0.35;

/// Bonus for name coverage: the query weight of the terms that hit a tool's
/// name over the number of its name terms (at most 1), applied as
/// `NAME_COVER_BONUS * coverage²`.
const NAME_COVER_BONUS: f32 = 2.5;
/// Bonus for a query word that is verbatim a multi-part tool name.
const VERBATIM_NAME_BONUS: f32 = 1000.0;

/// Input limits: a huge query is read up to here, deterministically.
const MAX_QUERY_BYTES: usize = 8 * 1024;
const MAX_QUERY_TERMS: usize = 256;

/// The top bit of a posting's tool field marks a term that occurs in the name.
const NAME_FLAG: u32 = 1 << 31;

#[derive(Debug, Clone, Copy)]
struct Posting {
    /// Registry index, with [`NAME_FLAG`] set when the term is one of the name's.
    tool: u32,
    /// `idf * saturated weighted tf`: the score this term gives this tool at
    /// query weight 1.
    score: f32,
}

/// The search index of one registry: built once, read-only afterwards.
///
/// Owned, `Send + Sync`; share it behind an `Arc`.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    /// Term -> term id (index into `postings`).
    terms: HashMap<Box<str>, u32>,
    /// Per term, the tools it occurs in, in registry order.
    postings: Vec<Box<[Posting]>>,
    /// Lowercased tool name -> registry indices (case-insensitive duplicates
    /// are possible; case-exact names are looked up through `tools`).
    names: HashMap<Box<str>, Vec<u32>>,
    /// Per tool, the name as written and its number of distinct name terms.
    tools: Vec<(Box<str>, u16)>,
    /// Lowercased multi-part tool names (with a separator or camelCase) that a
    /// query may mention verbatim among other words.
    identifier_names: HashMap<Box<str>, Vec<u32>>,
}

impl SearchIndex {
    /// Indexes every tool of `registry`.
    pub fn new(registry: &Registry) -> SearchIndex {
        let tools = registry.tools();
        let mut terms: HashMap<Box<str>, u32> = HashMap::new();
        // Per tool: (term id, field) for every token occurrence, then counted.
        let mut per_tool: Vec<Vec<(u32, [u16; FIELDS])>> = Vec::with_capacity(tools.len());
        let mut lengths: Vec<[u32; FIELDS]> = Vec::with_capacity(tools.len());
        let mut name_terms: Vec<u16> = Vec::with_capacity(tools.len());
        let mut buf: Vec<String> = Vec::new();
        let mut occurrences: Vec<(u32, u8)> = Vec::new();

        for tool in tools {
            occurrences.clear();
            let mut len = [0u32; FIELDS];
            let mut add = |text: &str, field: usize, occ: &mut Vec<(u32, u8)>| {
                buf.clear();
                tokenize_into(text, &mut buf);
                len[field] += buf.len() as u32;
                for t in buf.drain(..) {
                    let id = match terms.get(t.as_str()) {
                        Some(&id) => id,
                        None => {
                            let id = terms.len() as u32;
                            terms.insert(t.into_boxed_str(), id);
                            id
                        }
                    };
                    occ.push((id, field as u8));
                }
            };
            add(&tool.name, NAME, &mut occurrences);
            add(&tool.description, DESCRIPTION, &mut occurrences);
            if let Some(props) = tool.parameters.get("properties").and_then(Value::as_object) {
                for (key, schema) in props {
                    add(key, PARAM_NAME, &mut occurrences);
                    if let Some(d) = schema.get("description").and_then(Value::as_str) {
                        add(d, PARAM_TEXT, &mut occurrences);
                    }
                    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
                        for v in values.iter().filter_map(Value::as_str) {
                            add(v, PARAM_TEXT, &mut occurrences);
                        }
                    }
                }
            }
            occurrences.sort_unstable();
            let mut counted: Vec<(u32, [u16; FIELDS])> = Vec::new();
            for &(id, field) in &occurrences {
                match counted.last_mut() {
                    Some((last, tf)) if *last == id => {
                        tf[field as usize] = tf[field as usize].saturating_add(1)
                    }
                    _ => {
                        let mut tf = [0u16; FIELDS];
                        tf[field as usize] = 1;
                        counted.push((id, tf));
                    }
                }
            }
            name_terms.push(
                counted
                    .iter()
                    .filter(|(_, tf)| tf[NAME] > 0)
                    .count()
                    .min(u16::MAX as usize) as u16,
            );
            per_tool.push(counted);
            lengths.push(len);
        }

        let n = tools.len().max(1) as f32;
        let mut avg = [0f32; FIELDS];
        for l in &lengths {
            for f in 0..FIELDS {
                avg[f] += l[f] as f32;
            }
        }
        for a in &mut avg {
            *a = (*a / n).max(1.0);
        }

        let mut df = vec![0u32; terms.len()];
        for counted in &per_tool {
            for (id, _) in counted {
                df[*id as usize] += 1;
            }
        }
        let idf: Vec<f32> = df
            .iter()
            .map(|&d| {
                let d = d as f32;
                (1.0 + (n - d + 0.5) / (d + 0.5)).ln()
            })
            .collect();

        let mut postings: Vec<Vec<Posting>> =
            df.iter().map(|&d| Vec::with_capacity(d as usize)).collect();
        for (i, counted) in per_tool.iter().enumerate() {
            let norm: [f32; FIELDS] = std::array::from_fn(|f| {
                1.0 - FIELD_B[f] + FIELD_B[f] * lengths[i][f] as f32 / avg[f]
            });
            for (id, tf) in counted {
                let mut w = 0.0;
                for f in 0..FIELDS {
                    if tf[f] > 0 {
                        w += FIELD_WEIGHT[f] * tf[f] as f32 / norm[f];
                    }
                }
                let saturated = w * (K1 + 1.0) / (w + K1);
                let flag = if tf[NAME] > 0 { NAME_FLAG } else { 0 };
                postings[*id as usize].push(Posting {
                    tool: i as u32 | flag,
                    score: idf[*id as usize] * saturated,
                });
            }
        }

        let mut names: HashMap<Box<str>, Vec<u32>> = HashMap::new();
        let mut identifier_names: HashMap<Box<str>, Vec<u32>> = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            let lower = tool.name.trim().to_lowercase();
            if is_identifier_like(&tool.name) {
                identifier_names
                    .entry(lower.clone().into_boxed_str())
                    .or_default()
                    .push(i as u32);
            }
            names
                .entry(lower.into_boxed_str())
                .or_default()
                .push(i as u32);
        }

        SearchIndex {
            terms,
            postings: postings.into_iter().map(Vec::into_boxed_slice).collect(),
            names,
            tools: tools
                .iter()
                .zip(name_terms)
                .map(|(t, c)| (t.name.clone().into_boxed_str(), c))
                .collect(),
            identifier_names,
        }
    }

    /// Ranks the tools for `query`, best first, considering only tools whose registry
    /// index `i` has `eligible(i) == true`. Returns registry indices of tools with a
    /// positive relevance score only. Deterministic: same input, same output; ties
    /// break by registry order (lower index first).
    pub fn rank(&self, query: &str, eligible: impl Fn(usize) -> bool) -> Vec<usize> {
        let query = truncate(query, MAX_QUERY_BYTES);
        let trimmed = query.trim();
        if trimmed.is_empty() || self.tools.is_empty() {
            return Vec::new();
        }

        // Exact whole-query name matches: the case-exact name first, then any
        // case-insensitive ones in registry order.
        let mut exact: Vec<usize> = Vec::new();
        if let Some(list) = self.names.get(trimmed.to_lowercase().as_str()) {
            let mut list: Vec<usize> = list.iter().map(|&i| i as usize).collect();
            list.sort_by_key(|&i| (&*self.tools[i].0 != trimmed, i));
            exact.extend(list.into_iter().filter(|&i| eligible(i)));
        }

        let n = self.tools.len();
        let mut scores = vec![0f32; n];
        let mut name_hits = vec![0f32; n];
        let mut touched: Vec<u32> = Vec::new();

        for (id, weight) in self.query_terms(trimmed) {
            for p in self.postings[id as usize].iter() {
                let tool = (p.tool & !NAME_FLAG) as usize;
                if scores[tool] == 0.0 {
                    touched.push(tool as u32);
                }
                scores[tool] += weight * p.score;
                if p.tool & NAME_FLAG != 0 {
                    name_hits[tool] += weight;
                }
            }
        }

        // Tools named verbatim by one of the query's words.
        for word in trimmed
            .split(|c: char| c.is_whitespace() || "`'\",;()[]{}<>“”‘’，。；：（）".contains(c))
            .filter(|w| !w.is_empty())
            .take(MAX_QUERY_TERMS)
        {
            let word = word.trim_end_matches(['.', ':', '?', '!']);
            if let Some(list) = self.identifier_names.get(word.to_lowercase().as_str()) {
                for &i in list {
                    let i = i as usize;
                    if scores[i] == 0.0 {
                        touched.push(i as u32);
                    }
                    scores[i] += VERBATIM_NAME_BONUS;
                }
            }
        }

        // Sort key: descending score, then ascending index, packed into a u64
        // (positive f32 bits order like the floats themselves).
        let mut ranked: Vec<u64> = Vec::with_capacity(touched.len());
        for &t in &touched {
            let i = t as usize;
            let mut s = scores[i];
            if name_hits[i] > 0.0 && self.tools[i].1 > 0 {
                let cover = (name_hits[i] / self.tools[i].1 as f32).min(1.0);
                s += NAME_COVER_BONUS * cover * cover;
            }
            if s <= 0.0 || !s.is_finite() || exact.contains(&i) || !eligible(i) {
                continue;
            }
            ranked.push(((!s.to_bits()) as u64) << 32 | t as u64);
        }
        ranked.sort_unstable();
        exact.extend(ranked.into_iter().map(|k| (k & 0xffff_ffff) as usize));
        exact
    }

    /// The query's known terms with their weights, deduplicated (first occurrence
    /// keeps its place, the highest weight wins), at most [`MAX_QUERY_TERMS`].
    fn query_terms(&self, query: &str) -> Vec<(u32, f32)> {
        let mut out: Vec<(u32, f32)> = Vec::new();
        let mut push = |term: &str, weight: f32| {
            let Some(&id) = self.terms.get(term) else {
                return;
            };
            if let Some(e) = out.iter_mut().find(|e| e.0 == id) {
                e.1 = e.1.max(weight);
            } else if out.len() < MAX_QUERY_TERMS {
                out.push((id, weight));
            }
        };
        let syn = synonyms();
        let mut previous: Option<String> = None;
        scan(query, &mut |piece| match piece {
            Piece::Word { raw, parts } => {
                if parts.len() > 1 {
                    let whole = stem(&raw);
                    if !is_stopword(&whole) {
                        push(&whole, W_CAMEL_WHOLE);
                    }
                }
                for part in &parts {
                    let s = stem(part);
                    if is_stopword(&s) {
                        continue;
                    }
                    push(&s, W_WORD);
                    if let Some(list) = syn.get(s.as_str()) {
                        for (other, w) in list {
                            push(other, *w);
                        }
                    }
                }
                if let Some(prev) = previous.take() {
                    let joined = stem(&format!("{prev}{raw}"));
                    push(&joined, W_JOINED);
                }
                previous = Some(raw);
            }
            Piece::Cjk(run) => {
                previous = None;
                let mut s = String::new();
                for w in run.windows(2) {
                    s.clear();
                    s.extend(w);
                    push(&s, W_CJK_BIGRAM);
                }
                for &c in &run {
                    if !is_cjk_stopchar(c) {
                        s.clear();
                        s.push(c);
                        let w = if run.len() == 1 {
                            W_CJK_BIGRAM
                        } else {
                            W_CJK_UNIGRAM
                        };
                        push(&s, w);
                    }
                }
            }
            Piece::Break => previous = None,
        });
        out
    }
}

/// Cuts `s` to at most `max` bytes at a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A name with more than one part, like `get_file_contents` or `getFile`.
fn is_identifier_like(name: &str) -> bool {
    let mut parts = 0;
    scan(name, &mut |p| {
        if let Piece::Word { parts: ps, .. } = p {
            parts += ps.len();
        }
    });
    parts > 1 && !name.contains(char::is_whitespace)
}

// ---------------------------------------------------------------------------
// Tokenizer

/// What the scanner found, in text order.
enum Piece {
    /// A run of letters and digits: lowercased as a whole, and its parts split
    /// at camelCase and letter/digit boundaries (lowercased, not yet stemmed).
    Word { raw: String, parts: Vec<String> },
    /// A run of CJK characters.
    Cjk(Vec<char>),
    /// Punctuation other than a word separator: ends a phrase (no joining across).
    Break,
}

/// Chinese (Han), Japanese (kana) and Korean (Hangul) characters.
fn is_cjk(c: char) -> bool {
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
fn fold_width(c: char) -> char {
    match c as u32 {
        0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFF01 + 0x21).unwrap_or(c),
        0x3000 => ' ',
        _ => c,
    }
}

/// Splits text into words and CJK runs and hands each to `f`.
fn scan(text: &str, f: &mut impl FnMut(Piece)) {
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
fn split_word(w: &[char]) -> Vec<String> {
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
fn tokenize_into(text: &str, out: &mut Vec<String>) {
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
fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokenize_into(text, &mut out);
    out
}

/// Light English stemming of a lowercase word: plurals, `-ing`, `-ed`, and a
/// final `e`, so `create`, `creates`, `created` and `creating` agree.
fn stem(w: &str) -> String {
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
    }
    if s.ends_with('e') && s.len() >= 4 {
        s.pop();
    }
    s
}

/// `stopp` -> `stop`, `committ` -> `commit`; `add`, `call`, `pass` stay.
fn undouble(s: &mut String) {
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

const STOPWORDS: &[&str] = &[
    "a", "about", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by",
    "can", "could", "d", "did", "do", "doe", "does", "for", "from", "had", "has", "have", "he",
    "her", "here", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "let", "ll",
    "me", "might", "my", "of", "on", "onto", "or", "our", "out", "pleas", "please", "re", "s",
    "she", "should", "so", "some", "t", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "thi", "this", "those", "to", "too", "tool", "up", "us", "use", "ve", "via",
    "wa", "want", "was", "we", "were", "what", "when", "where", "which", "who", "whose", "why",
    "will", "with", "would", "you", "your",
];

fn is_stopword(s: &str) -> bool {
    STOPWORDS.binary_search(&s).is_ok()
}

/// Function characters that carry no meaning as unigrams (their bigrams still count).
fn is_cjk_stopchar(c: char) -> bool {
    "的了吗呢吧啊我你他她它们请帮是在和与或把给要想个一这那有么".contains(c)
}

/// Generic query expansions, keyed by stemmed term: (stemmed term, weight).
fn synonyms() -> &'static HashMap<String, Vec<(String, f32)>> {
    static MAP: OnceLock<HashMap<String, Vec<(String, f32)>>> = OnceLock::new();
    MAP.get_or_init(|| {
        // Groups of interchangeable words: each expands to the others.
        const GROUPS: &[&[&str]] = &[
            &["delete", "remove", "erase", "discard", "clear"],
            &["find", "search", "lookup", "locate", "look"],
            &["create", "add", "new", "make"],
            &[
                "get", "show", "read", "view", "display", "retrieve", "fetch", "see", "inspect",
            ],
            &["screenshot", "picture", "image", "photo"],
            &["update", "modify", "edit", "change", "alter"],
            &["list", "enumerate"],
            &["open", "navigate", "visit", "goto", "browse"],
            &["run", "execute", "exec", "invoke", "launch", "trigger"],
            &["close", "shut", "exit", "quit"],
            &["directory", "folder"],
            &["url", "link", "website", "webpage"],
            &["rename", "move"],
            &["download", "fetch"],
            &["save", "store", "persist"],
            &["start", "begin"],
            &["stop", "end", "halt", "finish"],
            &["type", "enter", "input"],
            &["weather", "forecast", "temperature"],
            &["time", "clock"],
            &["user", "person", "account", "profile", "people"],
            &["organization", "org", "company"],
            &["bug", "issue", "ticket"],
            &["log", "history"],
            &["diff", "difference", "compare"],
            &["label", "tag"],
            &["comment", "reply"],
            &["doc", "document", "documentation"],
            &["approve", "accept"],
            &["cancel", "abort"],
            &["scroll", "wheel"],
            &["copy", "duplicate"],
            &["location", "position", "coordinate"],
            &["multiple", "several", "many"],
            &["now", "current"],
            &["ask", "request"],
            &["shell", "bash", "terminal"],
            &["show", "list"],
            &["script", "javascript", "js"],
        ];
        // One-way expansions of abbreviations.
        const ABBREVIATIONS: &[(&str, &[&str])] = &[
            ("pr", &["pull", "request"]),
            ("prs", &["pull", "request"]),
            ("repo", &["repository"]),
            ("repos", &["repository"]),
            ("dir", &["directory"]),
            ("dirs", &["directory"]),
            ("cwd", &["current", "directory"]),
            ("info", &["information", "detail"]),
            ("config", &["configuration"]),
            ("env", &["environment"]),
            ("img", &["image"]),
            ("msg", &["message"]),
            ("gh", &["github"]),
        ];
        let mut map: HashMap<String, Vec<(String, f32)>> = HashMap::new();
        for group in GROUPS {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            for a in &stems {
                for b in &stems {
                    if a != b {
                        let list = map.entry(a.clone()).or_default();
                        if !list.iter().any(|(t, _)| t == b) {
                            list.push((b.clone(), W_SYNONYM));
                        }
                    }
                }
            }
        }
        for (short, long) in ABBREVIATIONS {
            let list = map.entry(stem(short)).or_default();
            for l in *long {
                list.push((stem(l), W_ABBREVIATION));
            }
        }
        map
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Tool;
    use serde_json::json;

    fn tool(name: &str, description: &str, params: Value) -> Tool {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters: params,
            source: None,
            defer_loading: false,
        }
    }

    fn registry(tools: &[(&str, &str)]) -> Registry {
        Registry::new(
            tools
                .iter()
                .map(|(n, d)| tool(n, d, json!({"type": "object", "properties": {}})))
                .collect(),
        )
        .unwrap()
    }

    fn names(reg: &Registry, idx: &SearchIndex, q: &str) -> Vec<String> {
        idx.rank(q, |_| true)
            .into_iter()
            .map(|i| reg.tools()[i].name.clone())
            .collect()
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
    fn cjk_substring_finds_tools() {
        let reg = registry(&[
            ("grep", "Search file contents"),
            ("zh_grep", "搜索文件内容"),
            ("weather", "根据城市名称查询天气"),
            ("noise", "地图服务"),
        ]);
        let idx = SearchIndex::new(&reg);
        assert_eq!(names(&reg, &idx, "文件")[0], "zh_grep");
        assert_eq!(names(&reg, &idx, "天气")[0], "weather");
        assert_eq!(names(&reg, &idx, "查询北京的天气")[0], "weather");
        // Mixed English and Chinese.
        let mixed = names(&reg, &idx, "search 文件内容");
        assert_eq!(mixed[0], "zh_grep", "{mixed:?}");
        assert!(mixed.contains(&"grep".to_string()));
    }

    #[test]
    fn exact_name_ranks_first() {
        let reg = registry(&[
            (
                "read_file_contents",
                "Read the file contents read file read",
            ),
            ("read_file", "Something else entirely"),
            ("file", "read file"),
        ]);
        let idx = SearchIndex::new(&reg);
        assert_eq!(names(&reg, &idx, "read_file")[0], "read_file");
        assert_eq!(names(&reg, &idx, "  READ_FILE ")[0], "read_file");
        assert_eq!(names(&reg, &idx, "file")[0], "file");
        // A name mentioned verbatim inside a longer query comes first too.
        assert_eq!(names(&reg, &idx, "call read_file please")[0], "read_file");
    }

    #[test]
    fn name_outweighs_description_outweighs_parameters() {
        let reg = Registry::new(vec![
            tool(
                "alpha",
                "nothing",
                json!({"properties": {"screenshot": {"type": "string"}}}),
            ),
            tool("beta", "take a screenshot", json!({})),
            tool("take_screenshot", "capture", json!({})),
            tool(
                "gamma",
                "nothing",
                json!({"properties": {"x": {"description": "screenshot"}}}),
            ),
        ])
        .unwrap();
        let idx = SearchIndex::new(&reg);
        assert_eq!(
            names(&reg, &idx, "screenshot"),
            ["take_screenshot", "beta", "alpha", "gamma"]
        );
    }

    #[test]
    fn eligibility_is_respected() {
        let reg = registry(&[
            ("list_files", "List files"),
            ("list_dirs", "List directories"),
            ("files", "files"),
        ]);
        let idx = SearchIndex::new(&reg);
        for q in ["list files", "list_files", "LIST_FILES"] {
            let r = idx.rank(q, |i| i != 0);
            assert!(!r.contains(&0) && r.len() == 2, "{q}: {r:?}");
        }
        assert_eq!(idx.rank("list_files", |_| true)[0], 0);
        assert!(idx.rank("list files", |_| false).is_empty());
    }

    #[test]
    fn ties_break_by_registry_order_and_results_are_deterministic() {
        let reg = registry(&[
            ("one", "open the door"),
            ("two", "close the window"),
            ("three", "open the door"),
            ("four", "open the door"),
        ]);
        let idx = SearchIndex::new(&reg);
        let first = idx.rank("door", |_| true);
        assert_eq!(first, vec![0, 2, 3]);
        for _ in 0..10 {
            assert_eq!(idx.rank("door", |_| true), first);
            assert_eq!(SearchIndex::new(&reg).rank("door", |_| true), first);
        }
    }

    #[test]
    fn empty_and_odd_queries_return_nothing_or_do_not_panic() {
        let reg = registry(&[("a_tool", "does things"), ("b", "文件")]);
        let idx = SearchIndex::new(&reg);
        assert!(idx.rank("", |_| true).is_empty());
        assert!(idx.rank("   \t\n", |_| true).is_empty());
        assert!(idx.rank("?!.,;:-_/", |_| true).is_empty());
        assert!(idx.rank("the a of", |_| true).is_empty());
        assert!(idx.rank("🦀🔥 \u{0}\u{200b}", |_| true).is_empty());
        let huge = "文件 things ".repeat(100_000);
        assert_eq!(idx.rank(&huge, |_| true), vec![1, 0]);
        let odd = "\u{10FFFF}é\u{301}ÅΩ𝔘 ＡＢＣ 123 __ -- ::";
        let _ = idx.rank(odd, |_| true);
        let empty = SearchIndex::new(&Registry::default());
        assert!(empty.rank("anything", |_| true).is_empty());
        assert!(idx.rank("zzzz", |_| true).is_empty(), "no match, no result");
    }

    #[test]
    fn synonyms_and_joins_help() {
        let reg = registry(&[
            ("remove_thing", "Remove a thing"),
            ("browser_localstorage_get", "Get a localStorage item"),
            ("list_pull_requests", "List pull requests"),
            ("list_issues", "List issues"),
        ]);
        let idx = SearchIndex::new(&reg);
        assert_eq!(names(&reg, &idx, "delete a thing")[0], "remove_thing");
        assert_eq!(
            names(&reg, &idx, "read local storage")[0],
            "browser_localstorage_get"
        );
        assert_eq!(names(&reg, &idx, "list open PRs")[0], "list_pull_requests");
    }

    #[test]
    fn index_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SearchIndex>();
    }
}
