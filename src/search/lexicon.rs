//! Lexical resources compiled into the binary: English synonyms and related
//! words from WordNet 3.0, and Chinese-to-English words from CC-CEDICT
//! (`data/`, made by `scripts/lexicon.py`; licences in `data/README.md`).
//!
//! The tables stay as the text the binary carries; the first query that needs
//! one builds only a small lookup over it (line offsets), so a process pays a
//! few hundred kilobytes once, and a registry pays nothing per tool.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::tokenize::{is_stopword, stem};

static WORDNET: &str = include_str!("data/wordnet.tsv");
static CEDICT: &str = include_str!("data/cedict.tsv");

/// Longest Chinese headword of the dictionary, in characters.
pub(super) const CEDICT_MAX_CHARS: usize = 4;

/// What WordNet says about one query word: its synonyms (the other words of
/// its frequent senses) and its related words (derivations such as
/// `subscribe`/`subscription`, and what a verb's first sense is a kind of or
/// entails), each with the share of the word's uses (in WordNet's
/// sense-tagged corpus) that the sense it comes from has, from 0 to 1: a
/// light verb such as `show` spreads over many senses, so each of them says
/// little.
pub(super) struct Related {
    pub synonyms: Vec<(String, f32)>,
    pub related: Vec<(String, f32)>,
}

/// Stem of an English lemma -> the byte offsets of its lines in [`WORDNET`].
fn wordnet_index() -> &'static HashMap<String, Vec<u32>> {
    static INDEX: OnceLock<HashMap<String, Vec<u32>>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index: HashMap<String, Vec<u32>> = HashMap::new();
        for (offset, line) in lines(WORDNET) {
            if let Some((lemma, _)) = line.split_once('\t') {
                index.entry(stem(lemma)).or_default().push(offset);
            }
        }
        index
    })
}

/// The synonyms and related words of the English word whose stem is `stemmed`,
/// stemmed, without the word itself and without stopwords, most frequent
/// sense first.
pub(super) fn english(stemmed: &str) -> Option<Related> {
    let offsets = wordnet_index().get(stemmed)?;
    let mut out = Related {
        synonyms: Vec::new(),
        related: Vec::new(),
    };
    for &offset in offsets {
        let line = line_at(WORDNET, offset);
        let mut fields = line.split('\t').skip(1);
        let synonyms = fields.next().unwrap_or("");
        let related = fields.next().unwrap_or("");
        push_shared(&mut out.synonyms, synonyms, stemmed);
        push_shared(&mut out.related, related, stemmed);
    }
    out.related
        .retain(|(r, _)| !out.synonyms.iter().any(|(s, _)| s == r));
    let by_share = |a: &(String, f32), b: &(String, f32)| b.1.total_cmp(&a.1);
    out.synonyms.sort_by(by_share);
    out.related.sort_by(by_share);
    Some(out)
}

/// Adds the stems of `word:percent` entries, each once at its highest share.
fn push_shared(out: &mut Vec<(String, f32)>, entries: &str, except: &str) {
    for entry in entries.split_whitespace() {
        let (word, percent) = entry.split_once(':').unwrap_or((entry, "100"));
        let share = percent.parse::<f32>().unwrap_or(100.0) / 100.0;
        let s = stem(word);
        if s == except || is_stopword(&s) {
            continue;
        }
        match out.iter_mut().find(|(t, _)| *t == s) {
            Some(e) => e.1 = e.1.max(share),
            None => out.push((s, share)),
        }
    }
}

/// Line starts of [`CEDICT`], in its (byte-wise sorted) order.
fn cedict_index() -> &'static [u32] {
    static INDEX: OnceLock<Vec<u32>> = OnceLock::new();
    INDEX.get_or_init(|| lines(CEDICT).map(|(offset, _)| offset).collect())
}

/// How many words of a Chinese word's glosses are its English.
const CEDICT_WORDS: usize = 8;

/// One English word (stemmed) CC-CEDICT gives for a Chinese word.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct English {
    pub word: String,
    /// When the word comes only as the first of two-word glosses (`body`
    /// of `body weight` for 体重, `living` of `living room` for 客厅): the
    /// second word of each. Such a gloss names a kind of the second word's
    /// thing (a body weight is a weight), which the first word alone is
    /// not.
    pub with: Vec<String>,
}

/// The English words that CC-CEDICT gives for the Chinese word `word`: the
/// first [`CEDICT_WORDS`] words of its glosses, or `None` when the
/// dictionary does not have it.
pub(super) fn chinese(word: &str) -> Option<Vec<English>> {
    let index = cedict_index();
    let at = index
        .binary_search_by(|&offset| headword(line_at(CEDICT, offset)).cmp(word))
        .ok()?;
    let line = line_at(CEDICT, index[at]);
    let glosses_text = line.split_once('\t').map_or("", |(_, e)| e);
    let mut words: Vec<&str> = Vec::new();
    for w in glosses_text.split([';', ' ']).filter(|w| !w.is_empty()) {
        if words.len() < CEDICT_WORDS && !words.contains(&w) {
            words.push(w);
        }
    }
    let mut stems = Vec::new();
    push_stems(&mut stems, &words.join(" "), "");
    // Each gloss as its content words, stemmed.
    let glosses: Vec<Vec<String>> = glosses_text
        .split(';')
        .map(|g| {
            let mut out = Vec::new();
            push_stems(&mut out, g, "");
            out
        })
        .collect();
    Some(
        stems
            .into_iter()
            .map(|word| {
                let mut with = Vec::new();
                let mut only_first_of_pairs = true;
                for g in glosses.iter().filter(|g| g.contains(&word)) {
                    match g.as_slice() {
                        [a, b] if *a == word => with.push(b.clone()),
                        _ => only_first_of_pairs = false,
                    }
                }
                if !only_first_of_pairs {
                    with.clear();
                }
                English { word, with }
            })
            .collect(),
    )
}

/// How many of a Chinese word's first glosses name it in the English to
/// Chinese direction: a word that is only a late gloss (做法, `...; recipe`
/// fourth) is not what the English word usually means.
const REVERSE_GLOSSES: usize = 3;

/// English stem -> the two-character Chinese words that CC-CEDICT glosses
/// with that one word, among their first [`REVERSE_GLOSSES`] glosses (and
/// their first [`CEDICT_WORDS`] words, so that each also gives the stem in
/// the Chinese to English direction), as line offsets in [`CEDICT`]: those
/// whose first gloss it is first, then those of fewer glosses, then in
/// dictionary order. Built once, on the first English query word that asks.
fn cedict_reverse() -> &'static HashMap<String, Vec<u32>> {
    static INDEX: OnceLock<HashMap<String, Vec<u32>>> = OnceLock::new();
    INDEX.get_or_init(|| {
        // (position of the gloss, number of glosses, offset) per stem.
        let mut by_stem: HashMap<String, Vec<(u8, u8, u32)>> = HashMap::new();
        let mut stems = Vec::new();
        for (offset, line) in lines(CEDICT) {
            let Some((head, glosses)) = line.split_once('\t') else {
                continue;
            };
            // One character has many senses, and three or more are no
            // single index term (Chinese text is indexed by bigrams).
            if head.chars().count() != 2 {
                continue;
            }
            let count = glosses.split(';').count().min(u8::MAX as usize) as u8;
            let mut words = 0usize;
            for (position, gloss) in glosses.split(';').enumerate().take(REVERSE_GLOSSES) {
                words += gloss.split_whitespace().count();
                if words > CEDICT_WORDS {
                    break;
                }
                stems.clear();
                push_stems(&mut stems, gloss, "");
                // A gloss of one content word: `recipe`, not `body weight`.
                if let [stem] = stems.as_slice() {
                    let list = by_stem.entry(stem.clone()).or_default();
                    if !list.iter().any(|e| e.2 == offset) {
                        list.push((position as u8, count, offset));
                    }
                }
            }
        }
        by_stem
            .into_iter()
            .map(|(stem, mut list)| {
                list.sort_unstable();
                (stem, list.into_iter().map(|e| e.2).collect())
            })
            .collect()
    })
}

/// The two-character Chinese words whose CC-CEDICT gloss is the English
/// word whose stem is `stemmed`, the strongest first (see
/// [`cedict_reverse`]).
pub(super) fn chinese_for(stemmed: &str) -> impl Iterator<Item = &'static str> {
    cedict_reverse()
        .get(stemmed)
        .into_iter()
        .flatten()
        .map(|&offset| headword(line_at(CEDICT, offset)))
}

/// Whether CC-CEDICT has the Chinese word `word`.
pub(super) fn has_chinese(word: &str) -> bool {
    cedict_index()
        .binary_search_by(|&offset| headword(line_at(CEDICT, offset)).cmp(word))
        .is_ok()
}

fn headword(line: &str) -> &str {
    line.split_once('\t').map_or(line, |(h, _)| h)
}

fn push_stems(out: &mut Vec<String>, words: &str, except: &str) {
    for w in words.split_whitespace() {
        let s = stem(w);
        if s != except && !is_stopword(&s) && !out.contains(&s) {
            out.push(s);
        }
    }
}

/// Each non-empty line of `table` with its byte offset.
fn lines(table: &'static str) -> impl Iterator<Item = (u32, &'static str)> {
    let mut offset = 0usize;
    table.split('\n').filter_map(move |line| {
        let at = offset;
        offset += line.len() + 1;
        (!line.is_empty()).then_some((at as u32, line))
    })
}

fn line_at(table: &'static str, offset: u32) -> &'static str {
    let rest = table.get(offset as usize..).unwrap_or("");
    rest.split('\n').next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_for_lookup() {
        let heads: Vec<&str> = lines(CEDICT).map(|(_, l)| headword(l)).collect();
        assert!(heads.windows(2).all(|w| w[0] < w[1]));
        assert!(heads.iter().all(|h| h.chars().count() <= CEDICT_MAX_CHARS));
    }

    #[test]
    fn wordnet_gives_synonyms_and_derivations() {
        let r = english(&stem("subscribe")).expect("subscribe is in WordNet");
        assert!(
            r.related.iter().any(|(w, _)| *w == stem("subscription")),
            "{:?}",
            r.related
        );
        let r = english(&stem("finish")).expect("finish is in WordNet");
        assert!(
            r.synonyms.iter().any(|(w, _)| *w == stem("complete")),
            "{:?}",
            r.synonyms
        );
        assert!(english("zzzz").is_none());
    }

    #[test]
    fn wordnet_weighs_synonyms_by_how_often_their_sense_is_used() {
        let r = english(&stem("start")).expect("start is in WordNet");
        let share = |w: &str| {
            r.synonyms
                .iter()
                .find(|(t, _)| *t == stem(w))
                .map_or(0.0, |e| e.1)
        };
        // `begin` is what `start` usually means; `get` (`get going`) shares
        // a sense with it that `get` itself rarely has.
        assert!(share("begin") > 0.4, "{:?}", r.synonyms);
        assert!(share("get") < 0.05, "{:?}", r.synonyms);
    }

    #[test]
    fn cedict_translates_chinese_words() {
        let has = |zh: &str, en: &str| {
            chinese(zh).is_some_and(|e| e.iter().any(|e| e.word == stem(en) && e.with.is_empty()))
        };
        assert!(has("删除", "delete"));
        assert!(has("日程", "schedule"));
        // A gloss of related senses joined by `;` (`mission; assignment;
        // task`) gives each of them.
        assert!(has("任务", "task"));
        // A computing sense is kept wherever the entry lists it (导出: to
        // derive, ..., to export (data)).
        assert!(has("导出", "export"));
        assert!(chinese("不是一个词").is_none());
    }

    #[test]
    fn cedict_gives_chinese_for_english_main_glosses_first() {
        let zh = |en: &str| chinese_for(&stem(en)).collect::<Vec<_>>();
        // 菜谱 is `menu; recipe; cookbook`: recipe is one of its first glosses.
        assert!(zh("recipe").contains(&"菜谱"), "{:?}", zh("recipe"));
        // A first gloss comes before a later one: 天气 is `weather`, 天色
        // `color of the sky; weather`.
        let weather = zh("weather");
        let at = |w: &str| weather.iter().position(|z| *z == w);
        assert!(at("天气") < at("天色"), "{weather:?}");
        // A late gloss, a two-word gloss and a word of one or of three
        // characters give nothing: 做法 is recipe only fourth, 体重 is body
        // weight, 自行车 three characters.
        assert!(!zh("recipe").contains(&"做法"));
        assert!(!zh("body").contains(&"体重"));
        assert!(!zh("bicycle").contains(&"自行车"));
        assert!(zh("recipe").iter().all(|z| z.chars().count() == 2));
        // Each Chinese word given also gives the English word back.
        for z in zh("delete") {
            let back = chinese(z).expect("in the dictionary");
            assert!(back.iter().any(|e| e.word == stem("delete")), "{z}");
        }
        assert_eq!(zh("zzzz").len(), 0);
    }

    #[test]
    fn the_first_word_of_a_two_word_gloss_needs_the_second() {
        let english = |zh: &str| chinese(zh).expect("in the dictionary");
        let with = |zh: &str, en: &str| {
            english(zh)
                .into_iter()
                .find(|e| e.word == stem(en))
                .unwrap_or_else(|| panic!("{zh} gives {en}"))
                .with
        };
        // 体重 is `body weight`: a weight, but not a body.
        assert_eq!(with("体重", "body"), vec![stem("weight")]);
        assert!(with("体重", "weight").is_empty());
        // 客厅 is a `drawing room` or a `living room`.
        assert_eq!(with("客厅", "living"), vec![stem("room")]);
        assert_eq!(with("客厅", "drawing"), vec![stem("room")]);
        assert!(with("客厅", "room").is_empty());
        // A gloss of one word, or of three, stands alone: 个数 is the
        // `number of items or individuals`.
        assert!(english("个数").iter().all(|e| e.with.is_empty()));
        assert!(english("关掉").iter().all(|e| e.with.is_empty()));
    }
}
