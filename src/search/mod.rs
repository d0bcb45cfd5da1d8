//! Search over the tool registry (docs/runtime.md): ranks tools for a natural-language
//! query.
//!
//! The pipeline, one file per step:
//!
//! 1. `tokenize`: text to words (split, lowercased, stemmed, stopwords out)
//!    and CJK character n-grams;
//! 2. `corpus`: a registry's words, per tool and field, read once;
//! 3. `index`: BM25F postings over the tools a context does not hide;
//! 4. `query`: a query's terms, grouped into concepts with their expansions
//!    (`vocab`, `lexicon`, `shape`);
//! 5. `rank`: concepts scored against the postings, bonuses of the request's
//!    structure (`intent`, named servers, verbatim names) on top;
//! 6. `fit`: which ranked tools a search activates, judged by what each
//!    match is made of, and when nothing fits;
//! 7. `explain`: one tool's score and fit taken apart;
//! 8. `learned`: the learned terms of a policy's terms file, matched as
//!    phrases.
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
//! A policy's terms file adds a fifth, the learned terms (2.0, between the
//! name and the description), which counts only as whole phrases: a term
//! adds to a tool's score, and makes it fit, only when the query covers
//! most of it (`learned`).
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
//! English; the other way, an English word reaches the (at most three)
//! two-character Chinese words of the registry that CC-CEDICT glosses with
//! it, main glosses first (`recipe` -> 菜谱), so an English request finds a
//! tool described only in Chinese. Both weigh less than the query's own
//! words.
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
mod fit;
mod index;
mod intent;
mod learned;
mod lexicon;
mod query;
mod rank;
mod shape;
mod tokenize;
mod vocab;

#[cfg(test)]
mod learned_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

pub use explain::{Bonus, ConceptMatch, Explanation, TermMatch};
pub use fit::{CLOSE_COVER, CLOSE_SCORE, Fit, Ranked, TermFit, UnitCover};
pub use index::SearchIndex;
pub use learned::{TERM_COVER, TERM_WEIGHT};
pub use query::Origin;
