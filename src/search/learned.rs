//! Learned terms: the requests of a policy's terms file (`policy learn`
//! writes it from the audit log), one more field of each tool.
//!
//! A term is a phrase, a whole request that once led to its tool, and it
//! counts as one: a tool gains from a term only when the query covers at
//! least [`TERM_COVER`] of the term's words, not from each word the two
//! share. A word the query has itself covers the term's word in full, an
//! expansion as strongly as fitting counts it (a synonym or translation
//! less); a Chinese character alone of a term that has its bigrams, or a
//! pair across a function character, weighs [`TERM_CHAR`] of a word. A term the query covers so adds its tool a
//! score, as a field weighted [`TERM_WEIGHT`] would (below the name's 3.0,
//! above the description's 1.0), for the words covered, and makes the tool
//! fit the query on its own. A tool takes its best term, never the sum of
//! them, so a tool with many terms is no likelier to match.
//!
//! The terms' words are read once per registry and file ([`TermWords`]),
//! with the same tokenization as the tools' own text; an index keeps only
//! the terms of the tools it indexes ([`LearnedIndex`]), so a hidden tool's
//! terms are never searched, and a word only they have is no word of the
//! index. A term for a tool the registry lacks is left out (the linter says
//! so).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use crate::terms::TermsFile;

use super::corpus::Corpus;
use super::tokenize::{is_cjk, is_cjk_stopchar, tokenize_into};

/// A term counts as its tool's request when the query covers at least this
/// share of its words.
pub const TERM_COVER: f32 = 0.6;
/// What a term the query covers less than [`TERM_COVER`] of adds to the
/// ranking, as a share of what it would add covered: a word a tool's
/// requests used tells the ranking something, never enough for a fit.
pub const TERM_PARTIAL: f32 = 0.5;
/// A word more than this share of the indexed terms have (and more than
/// [`COMMON_FLOOR`] of them) is common: it counts towards covering a term,
/// but a term covered in part ranks its tool only for the words that are
/// not, as a word everyone uses tells the ranking nothing.
const COMMON_SHARE: f32 = 0.01;
const COMMON_FLOOR: usize = 8;
/// The terms' field weight: below a name's, above a description's.
pub const TERM_WEIGHT: f32 = 2.0;
/// What a Chinese character alone weighs in a term that also has the
/// character's bigrams: the bigrams say what the term is.
const TERM_CHAR: f32 = 0.35;
/// What a number weighs in a term (`6am`, an issue number): little.
const TERM_NUMBER: f32 = 0.25;
/// BM25's term-frequency saturation, as the index uses it.
const K1: f32 = 1.2;

/// One term of one tool.
#[derive(Debug, Clone)]
pub(super) struct Phrase {
    /// The tool's registry index.
    pub tool: u32,
    /// The term as the file writes it.
    pub text: Box<str>,
    /// Its distinct words (term ids) with their weights.
    pub words: Box<[(u32, f32)]>,
    /// The sum of the weights.
    pub total: f32,
}

/// The words of a terms file against one registry's corpus.
#[derive(Debug, Default)]
pub(super) struct TermWords {
    /// Term words that no tool's own text has, numbered after the corpus's
    /// terms (`corpus.terms.len() + k`).
    pub extra: HashMap<Box<str>, u32>,
    /// Those words by `id - corpus.terms.len()`.
    pub extra_text: Vec<Box<str>>,
    /// Every term of a tool the registry has, in registry order.
    pub phrases: Vec<Phrase>,
}

impl TermWords {
    pub fn new(corpus: &Corpus, file: &TermsFile) -> TermWords {
        let by_name: HashMap<&str, u32> = corpus
            .tools
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (&**name, i as u32))
            .collect();
        let base = corpus.terms.len() as u32;
        let mut out = TermWords::default();
        let mut buf: Vec<String> = Vec::new();
        for (tool, terms) in file.tools() {
            let Some(&index) = by_name.get(tool.as_str()) else {
                continue;
            };
            for term in terms {
                buf.clear();
                tokenize_into(term, &mut buf);
                let has_bigram = buf
                    .iter()
                    .any(|w| w.chars().count() >= 2 && w.chars().all(is_cjk));
                let mut words: Vec<(u32, f32)> = Vec::with_capacity(buf.len());
                for w in buf.drain(..) {
                    let weight = if w.bytes().all(|b| b.is_ascii_digit()) {
                        TERM_NUMBER
                    } else if has_bigram
                        && w.chars().all(is_cjk)
                        && (w.chars().count() == 1 || w.chars().any(is_cjk_stopchar))
                    {
                        // A character alone, or a pair across a function
                        // character (`一下` of `记一下`), says little.
                        TERM_CHAR
                    } else {
                        1.0
                    };
                    let id = match corpus.terms.get(w.as_str()) {
                        Some(&id) => id,
                        None => match out.extra.get(w.as_str()) {
                            Some(&id) => id,
                            None => {
                                let id = base + out.extra_text.len() as u32;
                                out.extra_text.push(w.clone().into_boxed_str());
                                out.extra.insert(w.into_boxed_str(), id);
                                id
                            }
                        },
                    };
                    match words.iter_mut().find(|(i, _)| *i == id) {
                        Some(e) => e.1 = e.1.max(weight),
                        None => words.push((id, weight)),
                    }
                }
                if words.is_empty() {
                    continue;
                }
                words.sort_unstable_by_key(|(id, _)| *id);
                out.phrases.push(Phrase {
                    tool: index,
                    text: term.as_str().into(),
                    total: words.iter().map(|(_, w)| w).sum(),
                    words: words.into_boxed_slice(),
                });
            }
        }
        out.phrases.sort_by_key(|p| p.tool);
        out
    }

    /// The text of a word of the terms that the corpus lacks.
    pub fn extra_word(&self, id: u32, base: u32) -> Option<&str> {
        id.checked_sub(base)
            .and_then(|k| self.extra_text.get(k as usize))
            .map(|w| &**w)
    }
}

/// One word of a term, as an index walks it: the term, the word's weight,
/// and what the word adds to the term's score when covered in full.
#[derive(Debug, Clone, Copy)]
struct Entry {
    phrase: u32,
    weight: f32,
    score: f32,
    /// The covered weight at which the term is covered whole
    /// ([`TERM_COVER`] of its words).
    need: f32,
    /// Few terms have the word (see [`COMMON_SHARE`]).
    telling: bool,
}

/// The terms of the tools one index holds, by word.
#[derive(Debug)]
pub(super) struct LearnedIndex {
    pub words: Arc<TermWords>,
    by_word: HashMap<u32, Box<[Entry]>>,
    /// How many terms the indexed tools have.
    terms: usize,
}

/// A term the query covers: which, how much of it, and the score it adds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct TermHit {
    pub phrase: u32,
    pub cover: f32,
    pub score: f32,
}

impl TermHit {
    /// The query covers enough of the term for the tool to fit on it.
    pub fn whole(&self) -> bool {
        self.cover >= TERM_COVER
    }
}

/// Per term, what one query covered: its weight, its score, the score of
/// the words that are not common, whether it may be a hit; and the terms
/// that may (a term only common words touch, and not whole, is none).
struct Scratch {
    cover: Vec<f32>,
    score: Vec<f32>,
    told: Vec<f32>,
    marked: Vec<bool>,
    touched: Vec<u32>,
}

thread_local! {
    /// Per term, the covered weight and the score of one query; reset after
    /// each query through the list of terms it touched.
    static SCRATCH: RefCell<Scratch> = const {
        RefCell::new(Scratch {
            cover: Vec::new(),
            score: Vec::new(),
            told: Vec::new(),
            marked: Vec::new(),
            touched: Vec::new(),
        })
    };
}

impl LearnedIndex {
    /// The terms of the tools `visible` keeps; `idf` gives a word's inverse
    /// document frequency over them (a word no indexed tool's text has
    /// counts as the rarest).
    pub fn new(words: Arc<TermWords>, visible: &[bool], idf: impl Fn(u32) -> f32) -> LearnedIndex {
        let saturated = TERM_WEIGHT * (K1 + 1.0) / (TERM_WEIGHT + K1);
        let mut by_word: HashMap<u32, Vec<Entry>> = HashMap::new();
        let mut terms = 0;
        for (k, p) in words.phrases.iter().enumerate() {
            if !visible.get(p.tool as usize).copied().unwrap_or(false) {
                continue;
            }
            terms += 1;
            for &(id, weight) in p.words.iter() {
                by_word.entry(id).or_default().push(Entry {
                    phrase: k as u32,
                    weight,
                    score: weight * idf(id) * saturated,
                    need: TERM_COVER * p.total,
                    telling: true,
                });
            }
        }
        let common = COMMON_FLOOR.max((COMMON_SHARE * terms as f32) as usize);
        for list in by_word.values_mut() {
            if list.len() > common {
                list.iter_mut().for_each(|e| e.telling = false);
            }
        }
        LearnedIndex {
            words,
            terms,
            by_word: by_word
                .into_iter()
                .map(|(id, e)| (id, e.into_boxed_slice()))
                .collect(),
        }
    }

    /// How many terms the indexed tools have.
    pub fn len(&self) -> usize {
        self.terms
    }

    /// Whether an indexed tool's term has the word.
    pub fn has(&self, id: u32) -> bool {
        self.by_word.contains_key(&id)
    }

    /// The terms a query covers, the best of each tool (by score, then
    /// cover, then the first term), by tool; a term covered less than
    /// [`TERM_COVER`] scores [`TERM_PARTIAL`] of its share of the words
    /// that are not common (none: no hit), and is no [`TermHit::whole`] hit. `words` are the query's words
    /// (term ids, each once) with how much of a term's word each covers.
    pub fn hits(&self, words: impl IntoIterator<Item = (u32, f32)>) -> Vec<(u32, TermHit)> {
        if self.by_word.is_empty() {
            return Vec::new();
        }
        let words: Vec<(f32, &[Entry])> = words
            .into_iter()
            .filter(|&(_, c)| c > 0.0)
            .filter_map(|(id, c)| Some((c, &**self.by_word.get(&id)?)))
            .collect();
        if words.is_empty() {
            return Vec::new();
        }
        SCRATCH.with(|cell| {
            let Scratch {
                cover,
                score,
                told,
                marked,
                touched,
            } = &mut *cell.borrow_mut();
            let n = self.words.phrases.len();
            if cover.len() < n {
                cover.resize(n, 0.0);
                score.resize(n, 0.0);
                told.resize(n, 0.0);
                marked.resize(n, false);
            }
            // Only a term that a telling word touches, or that the query
            // covers whole, can be a hit: the common words of a large file
            // touch many terms, and only those are sorted and judged.
            for &(c, list) in &words {
                for e in list {
                    let p = e.phrase as usize;
                    cover[p] += e.weight * c;
                    score[p] += e.score * c;
                    if e.telling {
                        told[p] += e.score * c;
                    }
                    if !marked[p] && (e.telling || cover[p] >= e.need) {
                        marked[p] = true;
                        touched.push(e.phrase);
                    }
                }
            }
            let mut best: Vec<(u32, TermHit)> = Vec::new();
            touched.sort_unstable();
            for &k in touched.iter() {
                let p = &self.words.phrases[k as usize];
                let share = (cover[k as usize] / p.total).min(1.0);
                let k_ = k as usize;
                let (mut s, t) = (score[k_] * share, told[k_] * share);
                if share < TERM_COVER {
                    if t <= 0.0 {
                        continue;
                    }
                    s = t * TERM_PARTIAL;
                }
                let hit = TermHit {
                    phrase: k,
                    cover: share,
                    score: s,
                };
                match best.last_mut() {
                    Some((tool, b)) if *tool == p.tool => {
                        if (hit.whole(), hit.score, hit.cover) > (b.whole(), b.score, b.cover) {
                            *b = hit;
                        }
                    }
                    _ => best.push((p.tool, hit)),
                }
            }
            touched.clear();
            for &(_, list) in &words {
                for e in list {
                    let p = e.phrase as usize;
                    (cover[p], score[p], told[p], marked[p]) = (0.0, 0.0, 0.0, false);
                }
            }
            best
        })
    }

    /// The text of a term.
    pub fn text(&self, phrase: u32) -> &str {
        &self.words.phrases[phrase as usize].text
    }
}
