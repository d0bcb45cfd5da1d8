//! Step 4 of the search pipeline: query expansion. A query becomes index
//! terms grouped into concepts (a query word with what it expands to), each
//! term weighted by where it came from ([`Origin`]).

use std::cell::{Cell, RefCell};

use super::index::SearchIndex;
use super::lexicon;
use super::shape::{is_file_type, shape_hints};
use super::tokenize::{Piece, is_cjk_stopchar, is_stopword, scan, stem};
use super::vocab::{QUESTION_WORDS, cjk_vocab, synonyms};

/// Query-term weights by origin.
const W_WORD: f32 = 1.0;
const W_CAMEL_WHOLE: f32 = 0.8;
const W_JOINED: f32 = 0.6;
pub(super) const W_CJK_BIGRAM: f32 = 1.0;
const W_CJK_UNIGRAM: f32 = 0.35;
/// WordNet: a synonym of a query word, and a derivation or broader word.
const W_LEXICON_SYNONYM: f32 = 0.45;
const W_LEXICON_RELATED: f32 = 0.35;
/// At most this many of each per query word: every term walks its postings,
/// and the first ones come from the most frequent senses.
const MAX_LEXICON_SYNONYMS: usize = 4;
const MAX_LEXICON_RELATED: usize = 3;
/// A sense used at least this often (a share of the word's tagged uses)
/// gives its words in full; a rarer one proportionally less.
const FULL_SENSE_SHARE: f32 = 0.25;
/// CC-CEDICT: the English of a Chinese word in the query, used even where the
/// registry has the Chinese word too (a tool may say it in English, or name
/// itself in English), and weighted under a direct match.
pub(super) const W_CEDICT: f32 = 0.7;
/// At most this many Chinese words an English query word reaches through
/// CC-CEDICT (those the registry has, the strongest glosses first): a word
/// that glosses many Chinese words (`set`, `check`) must not flood.
const MAX_CEDICT_CHINESE: usize = 3;
/// How many of an English word's Chinese words, strongest first, are
/// looked up in the index.
const CEDICT_CHINESE_LOOKUPS: usize = 24;
/// The share of [`W_CEDICT`] a one-character word gets.
const CEDICT_CHAR: f32 = 0.35;
/// A word made only of digits (an issue number, a port, a count).
const W_NUMBER: f32 = 0.25;
/// What a query word's shape implies (`notes.txt` -> file, `https://..` -> url).
const W_SHAPE: f32 = 0.6;
/// What a file name's extension implies beyond a file (`.md` -> markdown).
const W_SHAPE_TYPE: f32 = 0.3;
/// What a question word asks for (`when` -> time).
const W_QUESTION: f32 = 0.3;
/// A query word that is the start of a name term (and no term itself).
const W_PREFIX: f32 = 0.6;
const MIN_PREFIX: usize = 4;
const MAX_PREFIX_EXPANSIONS: usize = 4;
/// A plural in the query hints at a listing tool.
const W_PLURAL: f32 = 0.3;

/// Input limits: a huge query is read up to here, deterministically.
pub(super) const MAX_QUERY_BYTES: usize = 8 * 1024;
pub(super) const MAX_QUERY_TERMS: usize = 256;

/// One term of a query: its index term id, its weight, and the concept (the
/// query word or phrase it came from) it belongs to.
#[derive(Debug, Clone, Copy)]
pub(super) struct QueryTerm {
    /// The content unit this term stands for ([`NO_UNIT`] for none), and a
    /// second one for a joined pair.
    pub(super) unit: u32,
    pub(super) unit2: u32,
    pub(super) id: u32,
    pub(super) weight: f32,
    pub(super) concept: u32,
    pub(super) origin: Origin,
    /// For the English of a Chinese word that comes only as the first word
    /// of two-word glosses (`body` of 体重, `body weight`): the terms of the
    /// second words, one of which a tool must have too for this term to
    /// stand for the Chinese word in full ([`NO_PAIR`] for an empty slot;
    /// all empty for a term that needs none, [`ABSENT`] for a word no tool
    /// has).
    pub(super) pair: [u32; 2],
}

impl QueryTerm {
    /// How strongly a term of this origin and weight stands for its unit.
    pub(super) fn strength(&self) -> f32 {
        match self.origin {
            // A CJK character alone, or a pair across a function character,
            // weighs less than a word.
            Origin::Word if self.weight < W_CJK_BIGRAM * 0.99 => 0.3,
            Origin::Word | Origin::Joined => 1.0,
            Origin::Vocabulary => 0.8,
            Origin::Cedict if self.weight < W_CEDICT * 0.99 => 0.3,
            Origin::Cedict | Origin::Chinese => 0.7,
            Origin::Prefix => 0.6,
            Origin::WordNet => 0.4,
            Origin::Shape | Origin::Question | Origin::Plural => 0.0,
        }
    }
}

/// An empty slot of [`QueryTerm::pair`].
pub(super) const NO_PAIR: u32 = u32::MAX;
/// A word of [`QueryTerm::pair`] that no tool has.
pub(super) const ABSENT: u32 = u32::MAX - 1;

/// No content unit: the term stands for no word of the query's own
/// (a question word's hint, a plural's, a number).
pub(super) const NO_UNIT: u32 = 0;

/// A content word of the query: a stemmed English word, or a Chinese
/// dictionary word or character. Units are numbered from 1 in query order.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Unit {
    pub(super) text: String,
    /// The run of adjacent Chinese characters left alone (outside the
    /// query's dictionary words) this unit is one of, numbered from 1; 0
    /// for none.
    pub(super) run: u32,
    /// A word that names a file or a file type rather than what is asked:
    /// a part of a file name, path or web address (`notes` and `md` of
    /// `notes.md`), or a file-type word (`markdown`, `pdf`). It counts in
    /// the query's cover, but a direct match on it alone makes no fit.
    pub(super) weak: bool,
}

/// Where a query term came from, for [`SearchIndex::explain`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A word of the query itself (stemmed), a CJK bigram or character of it,
    /// or a camelCase word whole.
    Word,
    /// Two adjacent query words joined (`local storage` -> `localstorage`).
    Joined,
    /// The built-in vocabulary: synonyms, abbreviations, Chinese equivalents.
    Vocabulary,
    /// WordNet: a synonym, derivation or broader word.
    WordNet,
    /// CC-CEDICT: the English of a Chinese word of the query.
    Cedict,
    /// CC-CEDICT: a Chinese word whose gloss is an English word of the
    /// query (`recipe` -> 菜谱).
    Chinese,
    /// A name term the query word is the start of (`auth` -> `authenticated`).
    Prefix,
    /// What a word's shape implies (`notes.txt` -> file).
    Shape,
    /// What a question word asks for (`when` -> time).
    Question,
    /// A plural in the query hints at a listing tool.
    Plural,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Word => "query",
            Origin::Joined => "joined",
            Origin::Vocabulary => "vocabulary",
            Origin::WordNet => "wordnet",
            Origin::Cedict | Origin::Chinese => "cedict",
            Origin::Prefix => "prefix",
            Origin::Shape => "shape",
            Origin::Question => "question",
            Origin::Plural => "plural",
        }
    }
}

impl SearchIndex {
    /// Name terms that `word` (stemmed, not itself a term) abbreviates:
    /// `auth` -> `authenticated`, `notif` -> `notification`.
    fn name_prefixed(&self, word: &str) -> impl Iterator<Item = &str> {
        let ok = word.len() >= MIN_PREFIX && self.term(word).is_none();
        let vocabulary = &self.corpus.name_vocabulary;
        let start = vocabulary.partition_point(|(t, _)| &**t < word);
        vocabulary[start..]
            .iter()
            .take_while(move |(t, _)| ok && t.starts_with(word))
            .filter(move |(t, id)| t.len() >= word.len() + 2 && self.in_name[*id as usize])
            .take(MAX_PREFIX_EXPANSIONS)
            .map(|(t, _)| &**t)
    }

    /// The query's known terms with their weights, deduplicated (first occurrence
    /// keeps its place, the highest weight wins), at most [`MAX_QUERY_TERMS`].
    pub(super) fn query_terms(&self, query: &str) -> Vec<QueryTerm> {
        self.query_parts(query).0
    }

    /// [`SearchIndex::query_terms`], and the query's content units: each
    /// content word of the query (a stemmed English word, a Chinese
    /// dictionary word or character), whether or not any tool has it. Every
    /// term says which unit (or two, for a joined pair) it stands for.
    pub(super) fn query_parts(&self, query: &str) -> (Vec<QueryTerm>, Vec<Unit>) {
        let mut out: Vec<QueryTerm> = Vec::new();
        let units: RefCell<Vec<Unit>> = RefCell::new(Vec::new());
        // The unit(s) the terms pushed now stand for; 0 is none.
        let unit = Cell::new((NO_UNIT, NO_UNIT));
        // The other words of the two-word glosses the terms pushed now come
        // from (see [`QueryTerm::pair`]).
        let gloss_pair = Cell::new([NO_PAIR; 2]);
        let weak_words = weak_words(query);
        let weak_word = Cell::new(false);
        let new_unit = |text: &str, run: u32| -> u32 {
            let mut units = units.borrow_mut();
            if units.len() >= MAX_QUERY_TERMS {
                return NO_UNIT;
            }
            units.push(Unit {
                text: text.to_string(),
                run,
                weak: run == 0 && weak_word.get(),
            });
            units.len() as u32
        };
        // A term already present keeps the higher weight, and with it that
        // occurrence's concept and unit.
        let mut push = |term: &str, weight: f32, concept: u32, origin: Origin| {
            let Some(id) = self.term(term) else {
                return;
            };
            let (u1, u2) = unit.get();
            if let Some(e) = out.iter_mut().find(|e| e.id == id) {
                if weight > e.weight {
                    e.weight = weight;
                    e.concept = concept;
                    e.origin = origin;
                    (e.unit, e.unit2) = (u1, u2);
                    e.pair = gloss_pair.get();
                }
            } else if out.len() < MAX_QUERY_TERMS {
                out.push(QueryTerm {
                    id,
                    weight,
                    concept,
                    origin,
                    unit: u1,
                    unit2: u2,
                    pair: gloss_pair.get(),
                });
            }
        };
        let mut concept: u32 = 0;
        for word in query.split_whitespace().take(MAX_QUERY_TERMS) {
            concept += 1;
            unit.set((NO_UNIT, NO_UNIT));
            for (k, hint) in shape_hints(word).into_iter().enumerate() {
                // A file's type (`.md` -> markdown) says what the file is,
                // rarely what to do with it: it weighs less than `file`.
                let w = if k == 0 { W_SHAPE } else { W_SHAPE_TYPE };
                push(&stem(hint), w, concept, Origin::Shape);
            }
        }
        let syn = synonyms();
        let cjk = cjk_vocab();
        let mut previous: Option<String> = None;
        let mut previous_unit = NO_UNIT;
        let mut runs = 0u32;
        // After `without`, the next content word is what the user does not want.
        let mut negated = false;
        let mut word_piece = 0usize;
        scan(query, &mut |piece| match piece {
            Piece::Word { raw, parts } => {
                weak_word.set(weak_words.get(word_piece).copied().unwrap_or(false));
                word_piece += 1;
                if raw == "without" {
                    negated = true;
                    previous = None;
                    return;
                }
                if negated && !is_stopword(&stem(&raw)) {
                    negated = false;
                    previous = None;
                    return;
                }
                // `not staged` reads as `unstaged` where that is a term.
                if previous.as_deref() == Some("not") {
                    let un = stem(&format!("un{raw}"));
                    if self.term(&un).is_some() {
                        concept += 1;
                        unit.set((new_unit(&un, 0), NO_UNIT));
                        push(&un, W_WORD, concept, Origin::Word);
                        previous = None;
                        return;
                    }
                }
                if let Ok(i) = QUESTION_WORDS.binary_search_by(|(k, _)| (*k).cmp(&raw)) {
                    concept += 1;
                    unit.set((NO_UNIT, NO_UNIT));
                    push(
                        &stem(QUESTION_WORDS[i].1),
                        W_QUESTION,
                        concept,
                        Origin::Question,
                    );
                }
                let first_unit = units.borrow().len() as u32 + 1;
                if parts.len() > 1 {
                    let whole = stem(&raw);
                    if !is_stopword(&whole) {
                        concept += 1;
                        // The whole camelCase word stands for its first part.
                        unit.set((first_unit, NO_UNIT));
                        push(&whole, W_CAMEL_WHOLE, concept, Origin::Word);
                    }
                }
                for part in &parts {
                    let s = stem(part);
                    if is_stopword(&s) {
                        continue;
                    }
                    concept += 1;
                    if s.bytes().all(|b| b.is_ascii_digit()) {
                        unit.set((NO_UNIT, NO_UNIT));
                        push(&s, W_NUMBER, concept, Origin::Word);
                        continue;
                    }
                    unit.set((new_unit(&s, 0), NO_UNIT));
                    push(&s, W_WORD, concept, Origin::Word);
                    for t in self.name_prefixed(&s) {
                        push(t, W_PREFIX, concept, Origin::Prefix);
                    }
                    if is_plural(part, &s) {
                        // Asking about things in the plural hints at a listing.
                        let own = unit.replace((NO_UNIT, NO_UNIT));
                        push("list", W_PLURAL, PLURAL_CONCEPT, Origin::Plural);
                        unit.set(own);
                    }
                    if let Some(list) = syn.get(s.as_str()) {
                        for (other, w) in list {
                            push(other, *w, concept, Origin::Vocabulary);
                        }
                    }
                    if let Some(r) = lexicon::english(&s) {
                        for (t, share) in r.synonyms.iter().take(MAX_LEXICON_SYNONYMS) {
                            let w = W_LEXICON_SYNONYM * sense_weight(*share);
                            push(t, w, concept, Origin::WordNet);
                        }
                        for (t, share) in r.related.iter().take(MAX_LEXICON_RELATED) {
                            let w = W_LEXICON_RELATED * sense_weight(*share);
                            push(t, w, concept, Origin::WordNet);
                        }
                    }
                    // The Chinese words CC-CEDICT glosses with this word
                    // (`recipe` -> 菜谱), weighed as the English of a Chinese
                    // word is: a tool may be described only in Chinese.
                    let chinese = lexicon::chinese_for(&s)
                        .take(CEDICT_CHINESE_LOOKUPS)
                        .filter(|zh| self.term(zh).is_some())
                        .take(MAX_CEDICT_CHINESE);
                    for zh in chinese {
                        push(zh, W_CEDICT, concept, Origin::Chinese);
                    }
                }
                let last_unit = units.borrow().len() as u32;
                if let Some(prev) = previous.take() {
                    let joined = stem(&format!("{prev}{raw}"));
                    concept += 1;
                    // A joined pair stands for both words.
                    let this = if last_unit >= first_unit {
                        last_unit
                    } else {
                        NO_UNIT
                    };
                    unit.set((previous_unit, this));
                    push(&joined, W_JOINED, concept, Origin::Joined);
                    // Phrasal words: `make sure`, `kick off`, `api key`.
                    if let Some(list) = syn.get(joined.as_str()) {
                        for (other, w) in list {
                            push(other, *w, concept, Origin::Vocabulary);
                        }
                    }
                }
                previous = Some(raw);
                previous_unit = if last_unit >= first_unit {
                    last_unit
                } else {
                    NO_UNIT
                };
            }
            Piece::Cjk(run) => {
                previous = None;
                weak_word.set(false);
                let mut s = String::new();
                // The run's content units: its dictionary words, longest
                // first from the left, and its other characters one by one;
                // function characters are none.
                let mut char_unit = vec![NO_UNIT; run.len()];
                let mut i = 0;
                // Whether the character before was left alone.
                let mut alone = false;
                while i < run.len() {
                    let mut len = 1;
                    for l in (2..=lexicon::CEDICT_MAX_CHARS.min(run.len() - i)).rev() {
                        s.clear();
                        s.extend(&run[i..i + l]);
                        if lexicon::has_chinese(&s) {
                            len = l;
                            break;
                        }
                    }
                    if len > 1 || !is_cjk_stopchar(run[i]) {
                        let word: String = run[i..i + len].iter().collect();
                        let lone = len == 1;
                        if lone && !alone {
                            runs += 1;
                        }
                        let u = new_unit(&word, if lone { runs } else { 0 });
                        char_unit[i..i + len].fill(u);
                        alone = lone;
                    } else {
                        alone = false;
                    }
                    i += len;
                }
                let pair = |a: usize, b: usize| {
                    let (a, b) = (char_unit[a], char_unit[b]);
                    if a == NO_UNIT {
                        (b, NO_UNIT)
                    } else if a == b {
                        (a, NO_UNIT)
                    } else {
                        (a, b)
                    }
                };
                // The concept of the bigram starting at each character, and
                // of each character alone: a dictionary word's English joins
                // the concept of the word's own characters.
                let first_bigram = concept + 1;
                let mut char_concept = vec![0u32; run.len()];
                for (k, w) in run.windows(2).enumerate() {
                    s.clear();
                    s.extend(w);
                    concept += 1;
                    unit.set(pair(k, k + 1));
                    // A pair across a function character (`的会`) is
                    // rarely a word.
                    let w = if w.iter().any(|&c| is_cjk_stopchar(c)) {
                        W_CJK_UNIGRAM
                    } else {
                        W_CJK_BIGRAM
                    };
                    push(&s, w, concept, Origin::Word);
                }
                for (k, &c) in run.iter().enumerate() {
                    if !is_cjk_stopchar(c) {
                        s.clear();
                        s.push(c);
                        let w = if run.len() == 1 {
                            W_CJK_BIGRAM
                        } else {
                            W_CJK_UNIGRAM
                        };
                        concept += 1;
                        char_concept[k] = concept;
                        unit.set((char_unit[k], NO_UNIT));
                        push(&s, w, concept, Origin::Word);
                    }
                }
                // The run's dictionary words, longest first from the left,
                // bring their English.
                let mut i = 0;
                while i < run.len() {
                    let mut step = 1;
                    for len in (1..=lexicon::CEDICT_MAX_CHARS.min(run.len() - i)).rev() {
                        s.clear();
                        s.extend(&run[i..i + len]);
                        if let Some(english) = lexicon::chinese(&s) {
                            let concept = if len > 1 {
                                first_bigram + i as u32
                            } else {
                                char_concept[i]
                            };
                            // A character alone has many senses: its English
                            // says less, and a function character's nothing.
                            let weight = match len {
                                1 if is_cjk_stopchar(run[i]) => 0.0,
                                1 => W_CEDICT * CEDICT_CHAR,
                                _ => W_CEDICT,
                            };
                            unit.set((char_unit[i], NO_UNIT));
                            for e in english.iter().filter(|_| weight > 0.0) {
                                gloss_pair.set(self.pair_terms(&e.with));
                                push(&e.word, weight, concept, Origin::Cedict);
                                // And what the English word stands for, one
                                // step further (`改` -> change -> update).
                                for (other, w) in syn.get(e.word.as_str()).into_iter().flatten() {
                                    push(other, weight * w, concept, Origin::Cedict);
                                }
                            }
                            gloss_pair.set([NO_PAIR; 2]);
                            step = len;
                            break;
                        }
                    }
                    i += step;
                }
                // Known words inside the run bring their equivalents, which
                // count with the word itself, and their English, used even
                // where the registry has the Chinese word (a tool may say it
                // in English).
                for i in 0..run.len() {
                    for len in 1..=cjk.max_len.min(run.len() - i) {
                        s.clear();
                        s.extend(&run[i..i + len]);
                        if let Some(entry) = cjk.words.get(s.as_str()) {
                            unit.set(pair(i, i + len - 1));
                            let own = match len {
                                1 => char_concept[i],
                                _ => first_bigram + i as u32,
                            };
                            concept += 1;
                            for (t, w) in &entry.same {
                                let c = if own != 0 { own } else { concept };
                                push(t, *w, c, Origin::Vocabulary);
                            }
                            concept += 1;
                            for (t, w) in &entry.english {
                                push(t, *w, concept, Origin::Vocabulary);
                            }
                        }
                    }
                }
                // A verb split by a measure word or an aspect particle
                // (留个言, 开了会) is the word itself: its bigram and its
                // English.
                for (k, w) in run.windows(3).enumerate() {
                    if !SPLITTERS.contains(w[1])
                        || w.iter().any(|&c| is_cjk_stopchar(c) && c != w[1])
                    {
                        continue;
                    }
                    s.clear();
                    s.push(w[0]);
                    s.push(w[2]);
                    if let Some(english) = lexicon::chinese(&s) {
                        concept += 1;
                        unit.set((char_unit[k], char_unit[k + 2]));
                        push(&s, W_CJK_BIGRAM, concept, Origin::Joined);
                        for e in &english {
                            gloss_pair.set(self.pair_terms(&e.with));
                            push(&e.word, W_CEDICT, concept, Origin::Cedict);
                        }
                        gloss_pair.set([NO_PAIR; 2]);
                    }
                }
            }
            Piece::Break => previous = None,
        });
        (out, units.into_inner())
    }

    /// [`QueryTerm::pair`] for the second words of a term's two-word
    /// glosses. More than two, and the term needs none of them.
    fn pair_terms(&self, with: &[String]) -> [u32; 2] {
        match with {
            [a] => [self.term(a).unwrap_or(ABSENT), NO_PAIR],
            [a, b] => [
                self.term(a).unwrap_or(ABSENT),
                self.term(b).unwrap_or(ABSENT),
            ],
            _ => [NO_PAIR; 2],
        }
    }
}

/// Which word pieces of the query (in [`scan`] order) name a file rather
/// than what is asked (see [`Unit::weak`]): the pieces of a file name, path
/// or web address (`notes.md`, `/tmp/x.csv`), and a file-type word that
/// qualifies the next word (`the markdown notes`, `pdf files`). A file-type
/// word on its own (`deploy this yaml`, `convert it to markdown`) is what
/// is asked about, and stays a word like any other.
pub(super) fn weak_words(query: &str) -> Vec<bool> {
    // The pieces of the query are those of its whitespace-separated words
    // in turn.
    let mut weak = Vec::new();
    for word in query.split_whitespace() {
        let file = !shape_hints(word).is_empty();
        scan(word, &mut |piece| {
            if let Piece::Word { .. } = piece {
                weak.push(file);
            }
        });
    }
    // Each word piece, and whether a break (or Chinese text) follows it.
    let mut words: Vec<(String, bool)> = Vec::new();
    scan(query, &mut |piece| match piece {
        Piece::Word { raw, .. } => words.push((raw, false)),
        _ => {
            if let Some(last) = words.last_mut() {
                last.1 = true;
            }
        }
    });
    for (i, (raw, broken)) in words.iter().enumerate() {
        let qualifies = !broken
            && words
                .get(i + 1)
                .is_some_and(|(next, _)| !is_stopword(&stem(next)) && !is_file_type(next));
        if is_file_type(raw)
            && qualifies
            && let Some(w) = weak.get_mut(i)
        {
            *w = true;
        }
    }
    weak
}

/// How much a WordNet expansion counts, from the share of the query word's
/// uses that its sense has: in full from [`FULL_SENSE_SHARE`] up, less below.
fn sense_weight(share: f32) -> f32 {
    (share / FULL_SENSE_SHARE).min(1.0)
}

/// Characters that split a Chinese verb-object word (`留个言` is `留言`).
const SPLITTERS: &str = "个了过";

/// The concept of the plural hint, shared by every plural in the query.
const PLURAL_CONCEPT: u32 = u32::MAX;

/// A regular English plural: `tags`, `cookies`, `branches` (not `status`).
fn is_plural(word: &str, stemmed: &str) -> bool {
    word.len() > 3 && word.ends_with('s') && stem(&word[..word.len() - 1]) == stemmed
        || word.ends_with("ies") && stemmed.ends_with('y')
        || word.ends_with("es") && stem(&word[..word.len() - 2]) == stemmed
}

/// Cuts `s` to at most `max` bytes at a character boundary.
pub(super) fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
