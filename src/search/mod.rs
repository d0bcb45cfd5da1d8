//! Search over the tool registry (SPEC 3.3): ranks tools for a natural-language
//! query.
//!
//! The registry's words are read once per registry (`corpus`); the index
//! over them is counted once, and once more per set of tools a context hides
//! ([`SearchIndex::without`]): a hidden tool is not indexed at all, so it
//! moves no statistic. Every indexed tool contributes four fields:
//!
//! | field | weight | text |
//! | --- | ---: | --- |
//! | name | 3.0 | the tool name, split on `_ - . / :`, spaces and camelCase |
//! | description | 1.0 | the description |
//! | parameter names | 0.4 | the keys of the schema's top-level `properties` |
//! | parameter text | 0.15 | those properties' `description` strings and string `enum` values |
//!
//! Words are lowercased, lightly stemmed (plurals, `-ing`, `-ed`, `-ly`,
//! `-tion`, a final `e`, and a short list of irregular forms such as
//! `wrote`/`found`/`children`) and stripped of a small stopword list. Chinese,
//! Japanese and Korean text is indexed as character unigrams and bigrams of
//! every CJK run, so any substring of two or more characters finds the text
//! that contains it; a word split by a measure word (`留个言`) is also read
//! whole (`留言`).
//!
//! Scoring is BM25F: per tool, each term's field frequencies are weighted and
//! length-normalised per field, then saturated once (`k1`), and multiplied by
//! the term's inverse document frequency over the indexed tools. All of that
//! except the query weight is precomputed into the postings, so a query only
//! walks the postings of its own terms. On top of that, a tool whose name
//! tokens are largely covered by the query gets a bonus, and a query word that
//! is verbatim a (multi-word) tool name gets a larger one. A query equal to a
//! tool name (trimmed, case-insensitive) always ranks that tool first.
//!
//! Query terms are grouped into concepts: a query word together with what it
//! expands to. Expansions are generic synonyms (`delete`/`remove`/`erase`,
//! `popup`/`dialog`, ...), abbreviations (`pr` -> `pull request`, `mkdir` ->
//! `create directory`), phrasal words joined (`make sure` -> `verify`, `local
//! storage` -> `localstorage`), name terms the word is the start of (`auth` ->
//! `authenticated`), Chinese equivalents (`附近`/`周边`, `走路`/`步行`) and a small
//! Chinese-to-English glossary of software and everyday words (`文件` -> file,
//! `步行` -> walking), so a Chinese query also finds tools described in English
//! (used whether or not the registry has the Chinese word too; the
//! equivalents count with the word itself as one concept). Within a concept
//! a tool scores its best variant in full and the rest at a fraction, so a
//! word with many synonyms still counts about once.
//!
//! Beyond that hand-written vocabulary, two lexical resources are compiled in
//! (`lexicon`): WordNet gives each English query word the synonyms of its
//! frequent senses and its derivations, and CC-CEDICT gives each Chinese word
//! of the query (segmented longest-first) its English, used even where the
//! registry has the Chinese word, since a tool may say it, or be named, in
//! English. Both weigh less than the query's own words.
//!
//! The request's structure adds bonuses: a query naming a server (the word of
//! an `mcp:<server>` source tag) prefers that server's tools, and a request
//! to read or to change prefers a tool whose name's verb says the same
//! (`intent`). [`SearchIndex::explain`] takes a score apart.
//!
//! The shape of a word adds hints (`notes.txt` or `src/a.rs` -> file, `.png`
//! -> image, `https://..` or `example.com` -> url), digits weigh little, the word
//! after `without` is dropped, `not staged` also reads as `unstaged`, question
//! words hint at what they ask (`when` -> time), and a plural hints at a
//! listing tool.

mod corpus;
mod explain;
mod intent;
mod lexicon;
mod tokenize;
mod vocab;

use std::collections::HashMap;
use std::sync::Arc;

use crate::registry::Registry;

use corpus::Corpus;
pub use explain::{Bonus, ConceptMatch, Explanation, TermMatch};
use tokenize::{Piece, is_cjk_stopchar, is_stopword, scan, stem};
use vocab::{QUESTION_WORDS, cjk_vocab, synonyms};

/// Field weights and length-normalisation strengths, in field order
/// (name, description, parameter names, parameter text).
const FIELD_WEIGHT: [f32; FIELDS] = [3.0, 1.0, 0.4, 0.15];
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
const W_SYNONYM: f32 = 0.75;
const W_CJK_BIGRAM: f32 = 1.0;
const W_CJK_UNIGRAM: f32 = 0.35;
/// A Chinese word's Chinese equivalents, and its English glossary terms.
const W_CJK_SYNONYM: f32 = 0.7;
const W_GLOSSARY: f32 = 0.6;
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
const W_CEDICT: f32 = 0.7;
/// The share of [`W_CEDICT`] a one-character word gets.
const CEDICT_CHAR: f32 = 0.35;
/// A word made only of digits (an issue number, a port, a count).
const W_NUMBER: f32 = 0.25;
/// What a query word's shape implies (`notes.txt` -> file, `https://..` -> url).
const W_SHAPE: f32 = 0.6;
/// What a question word asks for (`when` -> time).
const W_QUESTION: f32 = 0.3;
/// A query word that is the start of a name term (and no term itself).
const W_PREFIX: f32 = 0.6;
const MIN_PREFIX: usize = 4;
const MAX_PREFIX_EXPANSIONS: usize = 4;
/// A plural in the query hints at a listing tool.
const W_PLURAL: f32 = 0.3;

/// Within one concept (a query word with its expansions) a tool scores its
/// best-matching variant in full and the others at this fraction.
const CONCEPT_REST: f32 = 0.3;

/// Bonus for name coverage: the query weight of the terms that hit a tool's
/// name over the number of its name terms (at most 1), applied as
/// `NAME_COVER_BONUS * coverage²`.
const NAME_COVER_BONUS: f32 = 2.5;
/// Bonus for a matched tool whose name's verb is of the kind the query asks
/// for: reading (`which`, `show`, `看看`) or changing (`add`, `delete`, `改`).
const INTENT_BONUS: f32 = 0.8;
/// Bonus for every tool of a server that the query names (`in Notion`).
const SERVER_BONUS: f32 = 4.0;
/// Bonus for a query word that is verbatim a multi-part tool name.
const VERBATIM_NAME_BONUS: f32 = 1000.0;

/// Input limits: a huge query is read up to here, deterministically.
const MAX_QUERY_BYTES: usize = 8 * 1024;
const MAX_QUERY_TERMS: usize = 256;

/// The top bit of a posting's tool field marks a term that occurs in the name.
const NAME_FLAG: u32 = 1 << 31;

/// Per-tool accumulators of one ranking: the total so far, and the current
/// concept's best, sum and best name weight.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    score: f32,
    name_hits: f32,
    best: f32,
    sum: f32,
    best_name: f32,
    in_concept: bool,
}

/// One term of a query: its index term id, its weight, and the concept (the
/// query word or phrase it came from) it belongs to.
#[derive(Debug, Clone, Copy)]
struct QueryTerm {
    id: u32,
    weight: f32,
    concept: u32,
    origin: Origin,
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
            Origin::Cedict => "cedict",
            Origin::Prefix => "prefix",
            Origin::Shape => "shape",
            Origin::Question => "question",
            Origin::Plural => "plural",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    /// Registry index, with [`NAME_FLAG`] set when the term is one of the name's.
    tool: u32,
    /// `idf * saturated weighted tf`: the score this term gives this tool at
    /// query weight 1.
    score: f32,
}

/// The search index of one registry, or of the registry without some tools
/// ([`SearchIndex::without`]): read-only once built.
///
/// Owned, `Send + Sync`; share it behind an `Arc`.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    /// The registry's words, shared by every index derived from it.
    corpus: Arc<Corpus>,
    /// Per term, the indexed tools it occurs in, in registry order; empty for
    /// a term only left-out tools have, which is then no term at all.
    postings: Vec<Box<[Posting]>>,
    /// Per term, whether it occurs in an indexed tool's name.
    in_name: Box<[bool]>,
    /// A word naming a server (see `Corpus::server_words`) -> the indexed
    /// tools of that server, in registry order.
    servers: HashMap<Box<str>, Box<[u32]>>,
}

impl SearchIndex {
    /// Indexes every tool of `registry`.
    pub fn new(registry: &Registry) -> SearchIndex {
        SearchIndex::index(Arc::new(Corpus::new(registry)), &[])
    }

    /// This index without the tools at the registry indices `hidden`, as if
    /// they were absent (SPEC 3.3): their words are no terms, and term
    /// statistics and prefix expansion see only the others, so
    /// no ranking reveals anything about a hidden tool. Indices stay registry
    /// indices. The registry is not read again: the statistics are counted
    /// from the words this index already holds.
    pub fn without(&self, hidden: &[u32]) -> SearchIndex {
        SearchIndex::index(Arc::clone(&self.corpus), hidden)
    }

    fn index(corpus: Arc<Corpus>, hidden: &[u32]) -> SearchIndex {
        let tools = corpus.per_tool.len();
        let mut visible = vec![true; tools];
        for &i in hidden {
            if let Some(v) = visible.get_mut(i as usize) {
                *v = false;
            }
        }
        let shown = || (0..tools).filter(|&i| visible[i]);

        let n = shown().count().max(1) as f32;
        let mut avg = [0f32; FIELDS];
        for i in shown() {
            for (a, &l) in avg.iter_mut().zip(&corpus.lengths[i]) {
                *a += l as f32;
            }
        }
        for a in &mut avg {
            *a = (*a / n).max(1.0);
        }

        let mut df = vec![0u32; corpus.terms.len()];
        for i in shown() {
            for (id, _) in corpus.per_tool[i].iter() {
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
        let mut in_name = vec![false; df.len()];
        for i in shown() {
            let norm: [f32; FIELDS] = std::array::from_fn(|f| {
                1.0 - FIELD_B[f] + FIELD_B[f] * corpus.lengths[i][f] as f32 / avg[f]
            });
            for (id, tf) in corpus.per_tool[i].iter() {
                let mut w = 0.0;
                for f in 0..FIELDS {
                    if tf[f] > 0 {
                        w += FIELD_WEIGHT[f] * tf[f] as f32 / norm[f];
                    }
                }
                let saturated = w * (K1 + 1.0) / (w + K1);
                let flag = if tf[NAME] > 0 {
                    in_name[*id as usize] = true;
                    NAME_FLAG
                } else {
                    0
                };
                postings[*id as usize].push(Posting {
                    tool: i as u32 | flag,
                    score: idf[*id as usize] * saturated,
                });
            }
        }
        let mut servers: HashMap<Box<str>, Vec<u32>> = HashMap::new();
        for i in shown() {
            for w in corpus.server_words[i].iter() {
                servers.entry(w.clone()).or_default().push(i as u32);
            }
        }
        SearchIndex {
            servers: servers
                .into_iter()
                .map(|(w, t)| (w, t.into_boxed_slice()))
                .collect(),
            corpus,
            postings: postings.into_iter().map(Vec::into_boxed_slice).collect(),
            in_name: in_name.into_boxed_slice(),
        }
    }

    /// The id of `term` if an indexed tool has it.
    fn term(&self, term: &str) -> Option<u32> {
        let id = *self.corpus.terms.get(term)?;
        (!self.postings[id as usize].is_empty()).then_some(id)
    }

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

    /// Ranks the tools for `query`, best first, considering only tools whose registry
    /// index `i` has `eligible(i) == true`. Returns registry indices of tools with a
    /// positive relevance score only. Deterministic: same input, same output; ties
    /// break by registry order (lower index first).
    pub fn rank(&self, query: &str, eligible: impl Fn(usize) -> bool) -> Vec<usize> {
        let query = truncate(query, MAX_QUERY_BYTES);
        let trimmed = query.trim();
        if trimmed.is_empty() || self.corpus.tools.is_empty() {
            return Vec::new();
        }

        // Exact whole-query name matches: the case-exact name first, then any
        // case-insensitive ones in registry order.
        let mut exact: Vec<usize> = Vec::new();
        if let Some(list) = self.corpus.names.get(trimmed.to_lowercase().as_str()) {
            let mut list: Vec<usize> = list.iter().map(|&i| i as usize).collect();
            list.sort_by_key(|&i| (&*self.corpus.tools[i].0 != trimmed, i));
            exact.extend(list.into_iter().filter(|&i| eligible(i)));
        }

        // Per concept (a query word with its expansions), a tool scores its
        // best variant in full and the others at a fraction, so a word with
        // many synonyms counts about once.
        let mut terms = self.query_terms(trimmed);
        terms.sort_by_key(|t| t.concept);
        let intent = intent::of_query(trimmed);
        let mut acc = vec![Acc::default(); self.corpus.tools.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut local: Vec<u32> = Vec::new();
        for group in terms.chunk_by(|a, b| a.concept == b.concept) {
            for t in group {
                for p in self.postings[t.id as usize].iter() {
                    let tool = (p.tool & !NAME_FLAG) as usize;
                    let a = &mut acc[tool];
                    if !a.in_concept {
                        a.in_concept = true;
                        local.push(tool as u32);
                    }
                    let v = t.weight * p.score;
                    a.sum += v;
                    a.best = a.best.max(v);
                    if p.tool & NAME_FLAG != 0 {
                        a.best_name = a.best_name.max(t.weight);
                    }
                }
            }
            for &tool in &local {
                let a = &mut acc[tool as usize];
                if a.score == 0.0 {
                    touched.push(tool);
                }
                a.score += a.best + CONCEPT_REST * (a.sum - a.best);
                a.name_hits += a.best_name;
                (a.sum, a.best, a.best_name, a.in_concept) = (0.0, 0.0, 0.0, false);
            }
            local.clear();
        }

        // A query that names a server prefers that server's tools, and a
        // tool the query names verbatim comes first.
        let bonuses = self
            .named_servers(trimmed)
            .into_iter()
            .flat_map(|(_, tools)| tools.iter().map(|&i| (i, SERVER_BONUS)))
            .chain(
                self.verbatim_names(trimmed)
                    .map(|i| (i, VERBATIM_NAME_BONUS)),
            );
        for (i, bonus) in bonuses {
            let a = &mut acc[i as usize];
            if a.score == 0.0 {
                touched.push(i);
            }
            a.score += bonus;
        }

        // Sort key: descending score, then ascending index, packed into a u64
        // (positive f32 bits order like the floats themselves).
        let mut ranked: Vec<u64> = Vec::with_capacity(touched.len());
        for &t in &touched {
            let i = t as usize;
            let s = acc[i].score
                + self.cover_bonus(i, acc[i].name_hits)
                + intent_bonus(intent, self.corpus.intents[i]);
            if s <= 0.0 || !s.is_finite() || exact.contains(&i) || !eligible(i) {
                continue;
            }
            ranked.push(((!s.to_bits()) as u64) << 32 | t as u64);
        }
        ranked.sort_unstable();
        exact.extend(ranked.into_iter().map(|k| (k & 0xffff_ffff) as usize));
        exact
    }

    /// The servers the query names (`in Notion`), each once, with their
    /// indexed tools.
    fn named_servers(&self, query: &str) -> Vec<(&str, &[u32])> {
        let mut named: Vec<(&str, &[u32])> = Vec::new();
        let mut words = Vec::new();
        tokenize::tokenize_into(query, &mut words);
        for word in words.iter().take(MAX_QUERY_TERMS) {
            if let Some((key, tools)) = self.servers.get_key_value(word.as_str())
                && !named.iter().any(|(k, _)| *k == &**key)
            {
                named.push((key, tools));
            }
        }
        named
    }

    /// Tools named verbatim by one of the query's words (`call read_file`).
    fn verbatim_names<'a>(&'a self, query: &'a str) -> impl Iterator<Item = u32> + 'a {
        query
            .split(|c: char| c.is_whitespace() || "`'\",;()[]{}<>“”‘’，。；：（）".contains(c))
            .filter(|w| !w.is_empty())
            .take(MAX_QUERY_TERMS)
            .filter_map(|word| {
                let word = word.trim_end_matches(['.', ':', '?', '!']);
                self.corpus
                    .identifier_names
                    .get(word.to_lowercase().as_str())
            })
            .flatten()
            .copied()
    }

    /// The bonus for the query covering the tool's name: `name_hits`, the
    /// query weight of the concepts that hit the name, over its name terms.
    fn cover_bonus(&self, tool: usize, name_hits: f32) -> f32 {
        let name_terms = self.corpus.tools[tool].1;
        if name_hits > 0.0 && name_terms > 0 {
            let cover = (name_hits / name_terms as f32).min(1.0);
            NAME_COVER_BONUS * cover * cover
        } else {
            0.0
        }
    }

    /// The query's known terms with their weights, deduplicated (first occurrence
    /// keeps its place, the highest weight wins), at most [`MAX_QUERY_TERMS`].
    fn query_terms(&self, query: &str) -> Vec<QueryTerm> {
        let mut out: Vec<QueryTerm> = Vec::new();
        // A term already present keeps the higher weight, and with it that
        // occurrence's concept.
        let mut push = |term: &str, weight: f32, concept: u32, origin: Origin| {
            let Some(id) = self.term(term) else {
                return;
            };
            if let Some(e) = out.iter_mut().find(|e| e.id == id) {
                if weight > e.weight {
                    e.weight = weight;
                    e.concept = concept;
                    e.origin = origin;
                }
            } else if out.len() < MAX_QUERY_TERMS {
                out.push(QueryTerm {
                    id,
                    weight,
                    concept,
                    origin,
                });
            }
        };
        let mut concept: u32 = 0;
        for word in query.split_whitespace().take(MAX_QUERY_TERMS) {
            concept += 1;
            for hint in shape_hints(word) {
                push(&stem(hint), W_SHAPE, concept, Origin::Shape);
            }
        }
        let syn = synonyms();
        let cjk = cjk_vocab();
        let mut previous: Option<String> = None;
        // After `without`, the next content word is what the user does not want.
        let mut negated = false;
        scan(query, &mut |piece| match piece {
            Piece::Word { raw, parts } => {
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
                        push(&un, W_WORD, concept, Origin::Word);
                        previous = None;
                        return;
                    }
                }
                if let Ok(i) = QUESTION_WORDS.binary_search_by(|(k, _)| (*k).cmp(&raw)) {
                    concept += 1;
                    push(
                        &stem(QUESTION_WORDS[i].1),
                        W_QUESTION,
                        concept,
                        Origin::Question,
                    );
                }
                if parts.len() > 1 {
                    let whole = stem(&raw);
                    if !is_stopword(&whole) {
                        concept += 1;
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
                        push(&s, W_NUMBER, concept, Origin::Word);
                        continue;
                    }
                    push(&s, W_WORD, concept, Origin::Word);
                    for t in self.name_prefixed(&s) {
                        push(t, W_PREFIX, concept, Origin::Prefix);
                    }
                    if is_plural(part, &s) {
                        // Asking about things in the plural hints at a listing.
                        push("list", W_PLURAL, PLURAL_CONCEPT, Origin::Plural);
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
                }
                if let Some(prev) = previous.take() {
                    let joined = stem(&format!("{prev}{raw}"));
                    concept += 1;
                    push(&joined, W_JOINED, concept, Origin::Joined);
                    // Phrasal words: `make sure`, `kick off`, `api key`.
                    if let Some(list) = syn.get(joined.as_str()) {
                        for (other, w) in list {
                            push(other, *w, concept, Origin::Vocabulary);
                        }
                    }
                }
                previous = Some(raw);
            }
            Piece::Cjk(run) => {
                previous = None;
                let mut s = String::new();
                // The concept of the bigram starting at each character, and
                // of each character alone: a dictionary word's English joins
                // the concept of the word's own characters.
                let first_bigram = concept + 1;
                let mut char_concept = vec![0u32; run.len()];
                for w in run.windows(2) {
                    s.clear();
                    s.extend(w);
                    concept += 1;
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
                            for t in english.iter().filter(|_| weight > 0.0) {
                                push(t, weight, concept, Origin::Cedict);
                                // And what the English word stands for, one
                                // step further (`改` -> change -> update).
                                for (other, w) in syn.get(t.as_str()).into_iter().flatten() {
                                    push(other, weight * w, concept, Origin::Cedict);
                                }
                            }
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
                for w in run.windows(3) {
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
                        push(&s, W_CJK_BIGRAM, concept, Origin::Joined);
                        for t in &english {
                            push(t, W_CEDICT, concept, Origin::Cedict);
                        }
                    }
                }
            }
            Piece::Break => previous = None,
        });
        out
    }
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

/// Known file extensions and what they say beyond "a file".
const EXTENSIONS: &[(&str, &str)] = &[
    ("bmp", "image"),
    ("c", ""),
    ("cfg", "configuration"),
    ("conf", "configuration"),
    ("cpp", ""),
    ("css", ""),
    ("csv", ""),
    ("gif", "image"),
    ("go", ""),
    ("h", ""),
    ("html", ""),
    ("ini", "configuration"),
    ("java", ""),
    ("jpeg", "image"),
    ("jpg", "image"),
    ("js", ""),
    ("json", ""),
    ("lock", ""),
    ("log", ""),
    ("md", "markdown"),
    ("pdf", "pdf"),
    ("png", "image"),
    ("py", ""),
    ("rb", ""),
    ("rs", ""),
    ("sh", ""),
    ("svg", "image"),
    ("toml", "configuration"),
    ("ts", ""),
    ("tsx", ""),
    ("txt", "text"),
    ("webp", "image"),
    ("xml", ""),
    ("yaml", "configuration"),
    ("yml", "configuration"),
    ("zip", ""),
];

/// Top-level domains that make `name.tld` a web address rather than a file.
const DOMAINS: &[&str] = &[
    "ai", "app", "cn", "co", "com", "de", "dev", "edu", "gov", "io", "jp", "net", "org", "uk",
];

/// Index terms implied by the shape of one whitespace-separated query word:
/// a web address means `url`, a file name or path means `file` (and an image
/// extension `image`, and so on).
fn shape_hints(word: &str) -> Vec<&'static str> {
    let word = word.trim_matches(|c: char| "`'\",;()[]{}<>?!“”‘’，。；：（）".contains(c));
    let lower = word.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("www.") {
        return vec!["url"];
    }
    let Some((stem_part, ext)) = lower.rsplit_once('.') else {
        return Vec::new();
    };
    let base = stem_part.rsplit('/').next().unwrap_or("");
    if ext.is_empty() || !ext.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Vec::new();
    }
    if !base.is_empty() && DOMAINS.binary_search(&ext).is_ok() && !stem_part.contains('/') {
        return vec!["url"];
    }
    match EXTENSIONS.binary_search_by(|(e, _)| (*e).cmp(ext)) {
        Ok(i) if !base.is_empty() || lower.starts_with('.') => {
            let extra = EXTENSIONS[i].1;
            if extra.is_empty() {
                vec!["file"]
            } else {
                vec!["file", extra]
            }
        }
        _ => Vec::new(),
    }
}

/// [`INTENT_BONUS`] where the query's intent is known and the tool's name
/// says the same.
fn intent_bonus(query: intent::Intent, tool: intent::Intent) -> f32 {
    if query != intent::Intent::Unknown && query == tool {
        INTENT_BONUS
    } else {
        0.0
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

#[cfg(test)]
mod tests {
    use super::tokenize::{STOPWORDS, stem, tokenize};
    use super::*;
    use crate::registry::Tool;
    use serde_json::{Value, json};

    fn tool(name: &str, description: &str, params: Value) -> Tool {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters: params,
            source: None,
            defer_loading: false,
            ..Default::default()
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

    #[test]
    fn word_shapes_imply_files_and_urls() {
        assert_eq!(shape_hints("notes.txt"), ["file", "text"]);
        assert_eq!(shape_hints("src/main.rs"), ["file"]);
        assert_eq!(shape_hints("`logo.png`"), ["file", "image"]);
        assert_eq!(shape_hints("https://example.com/a"), ["url"]);
        assert_eq!(shape_hints("example.com"), ["url"]);
        assert!(shape_hints("document.title").is_empty());
        assert!(shape_hints("3.5").is_empty());
        assert!(shape_hints("end.").is_empty());
    }

    #[test]
    fn synonyms_count_once_per_concept() {
        // `look` expands to find/search/locate/query; a tool matching all of
        // them must not beat one matching the query's other word as well.
        let reg = registry(&[
            ("finder", "find search locate query things"),
            ("page_finder", "find text in the page"),
        ]);
        let idx = SearchIndex::new(&reg);
        assert_eq!(names(&reg, &idx, "look in the page")[0], "page_finder");
    }

    #[test]
    fn query_shapes_negation_and_phrases_help() {
        let reg = registry(&[
            ("write_file", "Write content to a file"),
            ("save_page", "Save the page as PDF"),
            ("merge_pull_request", "Merge a pull request"),
            ("close_pull_request", "Close a pull request"),
            ("verify_visible", "Verify an element is visible"),
            ("click_button", "Click a button"),
            ("diff_unstaged", "Shows unstaged changes"),
            ("diff_staged", "Shows staged changes"),
        ]);
        let idx = SearchIndex::new(&reg);
        assert_eq!(names(&reg, &idx, "save this to notes.txt")[0], "write_file");
        assert_eq!(
            names(&reg, &idx, "close the pull request without merging")[0],
            "close_pull_request"
        );
        assert_eq!(
            names(&reg, &idx, "make sure the banner is there")[0],
            "verify_visible"
        );
        assert_eq!(
            names(&reg, &idx, "changes that are not staged")[0],
            "diff_unstaged"
        );
    }

    #[test]
    fn abbreviated_words_find_name_terms() {
        let reg = registry(&[
            ("get_authenticated_user", "Who is signed in"),
            ("get_author", "The writer of a book"),
        ]);
        let idx = SearchIndex::new(&reg);
        assert_eq!(names(&reg, &idx, "authent")[0], "get_authenticated_user");
    }

    #[test]
    fn plurals_hint_at_listing() {
        let reg = registry(&[("get_tag", "Get a tag"), ("list_tags", "List tags")]);
        let idx = SearchIndex::new(&reg);
        assert_eq!(names(&reg, &idx, "which tags exist")[0], "list_tags");
        assert_eq!(names(&reg, &idx, "tag v1.0")[0], "get_tag");
    }

    #[test]
    fn chinese_equivalents_and_glossary_help() {
        let reg = registry(&[
            ("walking_route", "步行路径规划"),
            ("driving_route", "驾车路径规划"),
            ("around_search", "周边搜索"),
            ("read_file", "Read a file"),
            ("click", "Click on the page"),
        ]);
        let idx = SearchIndex::new(&reg);
        assert_eq!(names(&reg, &idx, "走路去公园的路线")[0], "walking_route");
        assert_eq!(names(&reg, &idx, "开车去公司")[0], "driving_route");
        assert_eq!(names(&reg, &idx, "附近的酒店")[0], "around_search");
        assert_eq!(names(&reg, &idx, "读取文件内容")[0], "read_file");
        assert_eq!(names(&reg, &idx, "点击按钮")[0], "click");
    }

    #[test]
    fn a_query_naming_a_server_prefers_its_tools() {
        let mut a = tool("list_users", "List all users", json!({}));
        a.source = Some("mcp:metabase".into());
        let mut b = tool("get_users", "List all users", json!({}));
        b.source = Some("mcp:notion".into());
        let reg = Registry::new(vec![a, b]).unwrap();
        let idx = SearchIndex::new(&reg);
        assert_eq!(names(&reg, &idx, "all users in Notion")[0], "get_users");
        assert_eq!(names(&reg, &idx, "all users in metabase")[0], "list_users");
        // A hidden server's tools name nothing.
        assert_eq!(
            idx.without(&[1]).rank("notion", |_| true),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn chinese_words_reach_english_names_through_the_dictionary() {
        let reg = registry(&[
            ("calendar_event_patch", "日历-更新日程"),
            ("calendar_event_delete", "日历-删除日程"),
            ("dashboard_create", "Create a dashboard"),
            ("comment_create", "任务-新建评论"),
        ]);
        let idx = SearchIndex::new(&reg);
        // 改 -> change -> update, patch: a colloquial verb finds the formal one.
        assert_eq!(names(&reg, &idx, "把日程改一下")[0], "calendar_event_patch");
        // 仪表盘 -> dashboard, though the registry has 新建 in Chinese only.
        assert_eq!(names(&reg, &idx, "新建一个仪表盘")[0], "dashboard_create");
    }

    #[test]
    fn chinese_words_bring_their_english_where_the_registry_has_them_too() {
        // 仓库 is in the registry in Chinese; the glossary's `repository`
        // (CC-CEDICT says depot, storehouse) still finds the English tool.
        let reg = registry(&[
            ("zh_repo", "查看仓库信息"),
            ("get_repository", "Get a repository"),
            ("noise", "地图服务"),
        ]);
        let idx = SearchIndex::new(&reg);
        assert_eq!(names(&reg, &idx, "仓库"), ["zh_repo", "get_repository"]);
    }

    #[test]
    fn a_chinese_verb_split_by_a_measure_word_is_the_word() {
        let reg = registry(&[
            ("approval_task_approve", "审批-同意审批单"),
            ("approval_comment_create", "审批-在审批单下留言"),
            ("message_post", "Post a message"),
        ]);
        let idx = SearchIndex::new(&reg);
        // 留个言 is 留言 (leave a message): its bigram and its English.
        let terms = idx.query_terms("审批单上留个言");
        for term in ["留言", "messag"] {
            let id = idx.term(term).unwrap();
            assert!(
                terms.iter().any(|t| t.id == id && t.weight >= W_CEDICT),
                "{term}: {terms:?}"
            );
        }
        assert_eq!(
            names(&reg, &idx, "审批单上留个言")[0],
            "approval_comment_create"
        );
    }

    #[test]
    fn a_request_to_see_prefers_the_reading_sibling() {
        let reg = registry(&[
            ("create_comment", "Comment on a page"),
            ("retrieve_comment", "Comment on a page"),
        ]);
        let idx = SearchIndex::new(&reg);
        assert_eq!(
            names(&reg, &idx, "what do the comments on the page say")[0],
            "retrieve_comment"
        );
        assert_eq!(
            names(&reg, &idx, "看看页面的 comment")[0],
            "retrieve_comment"
        );
        assert_eq!(
            names(&reg, &idx, "comment on the page")[0],
            "create_comment"
        );
    }

    #[test]
    fn index_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SearchIndex>();
    }
}
