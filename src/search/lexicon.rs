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
/// its most frequent senses) and its related words (derivations such as
/// `subscribe`/`subscription`, and what a verb's first sense is a kind of).
pub(super) struct Related {
    pub synonyms: Vec<String>,
    pub related: Vec<String>,
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
/// stemmed, without the word itself and without stopwords.
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
        push_stems(&mut out.synonyms, synonyms, stemmed);
        push_stems(&mut out.related, related, stemmed);
    }
    out.related.retain(|r| !out.synonyms.contains(r));
    Some(out)
}

/// Line starts of [`CEDICT`], in its (byte-wise sorted) order.
fn cedict_index() -> &'static [u32] {
    static INDEX: OnceLock<Vec<u32>> = OnceLock::new();
    INDEX.get_or_init(|| lines(CEDICT).map(|(offset, _)| offset).collect())
}

/// The English words (stemmed) that CC-CEDICT gives for the Chinese word
/// `word`, or `None` when the dictionary does not have it.
pub(super) fn chinese(word: &str) -> Option<Vec<String>> {
    let index = cedict_index();
    let at = index
        .binary_search_by(|&offset| headword(line_at(CEDICT, offset)).cmp(word))
        .ok()?;
    let line = line_at(CEDICT, index[at]);
    let mut out = Vec::new();
    push_stems(&mut out, line.split_once('\t').map_or("", |(_, e)| e), "");
    Some(out)
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
        assert!(r.related.contains(&stem("subscription")), "{:?}", r.related);
        let r = english(&stem("finish")).expect("finish is in WordNet");
        assert!(r.synonyms.contains(&stem("complete")), "{:?}", r.synonyms);
        assert!(english("zzzz").is_none());
    }

    #[test]
    fn cedict_translates_chinese_words() {
        assert!(chinese("删除").is_some_and(|e| e.contains(&stem("delete"))));
        assert!(chinese("日程").is_some_and(|e| e.contains(&stem("schedule"))));
        // A gloss of related senses joined by `;` (`mission; assignment;
        // task`) gives each of them.
        assert!(chinese("任务").is_some_and(|e| e.contains(&stem("task"))));
        assert!(chinese("不是一个词").is_none());
    }
}
