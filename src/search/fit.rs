//! Step 6 of the search pipeline: whether a ranked tool fits the query well
//! enough to be activated on its own, judged by what its match is made of,
//! not by its score.
//!
//! The query's content units are its own content words (a stemmed English
//! word, a Chinese dictionary word or character), whether or not any tool
//! has them. Each unit the tool matches is covered by the best evidence it
//! has for it: the word itself, or a joined pair, counts in full; the
//! built-in vocabulary almost so; CC-CEDICT's English of a Chinese word a
//! little less; an abbreviation's name term, a WordNet synonym, a Chinese
//! character alone (of a longer word) or its English, less again. A
//! two-word gloss of CC-CEDICT names a kind of its second word's thing (体重
//! is `body weight`): its first word covers the Chinese word only as a
//! part ([`PART_OF_GLOSS`]) in a tool that lacks the second (a request
//! `body` is no body weight). Where the tool has it counts too: its name
//! and description in full, its parameter names and parameter text much
//! less.
//!
//! A tool fits the query on its own when it covers one of the query's
//! content words directly ([`DIRECT`] or more) that is not a light word (a
//! word that says little about what is asked: `some`, `next`, `off`,
//! `large`, `turn`, `一下`, `所有`), or when it covers at least [`MIN_COVER`]
//! of the query, unless the request is mostly about things the registry
//! does not have: the tool matches at most one of the query's words
//! directly, and the registry knows less than [`KNOWN_SHARE`] of the
//! query's words (light ones aside). The registry knows a word as surely as
//! the best evidence any tool has for it, in any field: a word only a
//! WordNet synonym reaches counts 0.4 of a word, one no tool has nothing
//! (`issue a refund to the squad on the dashboard` against tools that know
//! `dashboard`, and `publish` and `team` only as WordNet's words for `issue`
//! and `squad`, knows 1.8 of 4 words). A Chinese character left alone,
//! outside the query's dictionary words ([`CHAR_WEIGHT`]), weighs half a
//! word: it is often a measure word or part of a name the dictionary lacks.
//! Characters left alone side by side are read as such words, a pair of
//! characters each ([`RUN_CHAR_WEIGHT`] a character): `杭州天气` is `杭`,
//! `州` and `天气`, a word and a half's worth, one known; `带伞杭州天气`
//! two words' worth, one known.
//!
//! The pieces of a file name, path or web address in the query, and a
//! file-type word qualifying the next word (`notes.md`, `the markdown
//! notes`), are weak units: covered like any other, but a direct match on
//! them does not make a tool fit on its own (a request to read `notes.md`
//! and mail it is no request for a markdown tool). A word that only a
//! Chinese word of CC-CEDICT's reaches is known
//! ([`KNOWN_BY_TRANSLATION`]) as loosely as a WordNet synonym, except to
//! the tool that has that word.
//!
//! A search activates the best-ranked tool that fits, among the first
//! `limit` ranked; then each next one that fits too and is about as good a
//! match as the best: its score at least [`CLOSE_SCORE`] of the best's, or
//! its cover at least [`CLOSE_COVER`] of the best's; but not one that the
//! best already does all of and better: one whose matched words are only
//! some of the best's, with a score under [`SUBSUMED_SCORE`] of the best's,
//! nor one that matches directly no word the best does not match directly,
//! with a score under [`SAME_DIRECT_SCORE`] of the best's. A request whose
//! words no tool has (`play some jazz on Spotify`), or whose best match
//! rests only on light words or on weak evidence, activates nothing.

use std::collections::HashSet;
use std::sync::OnceLock;

use serde::Serialize;

use super::corpus::{DESCRIPTION, FIELDS, NAME, PARAM_NAME, PARAM_TEXT};
use super::index::{NAME_FLAG, SearchIndex};
use super::learned::TermHit;
use super::query::{ABSENT, NO_PAIR, NO_UNIT, Origin, QueryTerm, Unit};
use super::tokenize::stem;

/// A tool that covers this much of the query fits without a direct match.
pub(super) const MIN_COVER: f32 = 0.5;
/// Evidence this strong covers a unit directly.
pub(super) const DIRECT: f32 = 0.7;
/// A tool after the best is activated only when it fits and its score is
/// at least this share of the best's ...
pub const CLOSE_SCORE: f32 = 0.65;
/// ... or its cover at least this share of the best's.
pub const CLOSE_COVER: f32 = 0.9;
/// A tool after the best that matches only some of the best's words is
/// activated only with a score at least this share of the best's.
pub const SUBSUMED_SCORE: f32 = 0.75;
/// A tool after the best that matches directly no word the best does not
/// match directly is activated only with a score at least this share of
/// the best's.
pub const SAME_DIRECT_SCORE: f32 = 0.7;
/// A request is mostly about what no tool has when the registry knows less
/// than this share of its content words (see [`Fit::mostly_unknown`]).
const KNOWN_SHARE: f32 = 0.5;
/// What a Chinese character left alone (no dictionary word of the query
/// holds it) weighs as a content word: half a word.
const CHAR_WEIGHT: f32 = 0.5;
/// What each character of a run of two or more characters left alone
/// weighs: a pair of them is one word the dictionary lacks, half a word.
const RUN_CHAR_WEIGHT: f32 = CHAR_WEIGHT / 2.0;

/// Words that say little about what is asked: a match on them alone is no
/// match. Compared stemmed, as the index stems them.
const LIGHT: &[&str] = &[
    "again",
    "all",
    "also",
    "any",
    "anything",
    "come",
    "day",
    "each",
    "even",
    "every",
    "everything",
    "exist",
    "few",
    "get",
    "give",
    "go",
    "have",
    "help",
    "keep",
    "know",
    "large",
    "last",
    "like",
    "look",
    "make",
    "many",
    "much",
    "need",
    "new",
    "next",
    "off",
    "ok",
    "okay",
    "other",
    "own",
    "please",
    "put",
    "send",
    "some",
    "something",
    "start",
    "still",
    "take",
    "tell",
    "thing",
    "today",
    "tomorrow",
    "tonight",
    "turn",
    "want",
    "way",
    "yesterday",
    "一下",
    "上",
    "下",
    "个",
    "为",
    "什么",
    "今天",
    "到",
    "去",
    "哪个",
    "哪些",
    "哪里",
    "多久",
    "多少",
    "手",
    "所有",
    "时间",
    "明天",
    "给",
    "设",
    "这个",
    "那个",
    "需要",
    "帮",
    "一个",
];

fn is_light(word: &str) -> bool {
    static STEMS: OnceLock<HashSet<String>> = OnceLock::new();
    STEMS
        .get_or_init(|| LIGHT.iter().map(|w| stem(w)).collect())
        .contains(word)
}

/// How surely the registry knows a word of the query that only a Chinese
/// word of CC-CEDICT's reaches (see [`Origin::Chinese`]).
const KNOWN_BY_TRANSLATION: f32 = 0.4;

/// What the English of a Chinese word counts for when it is the first word
/// of a two-word gloss and the tool lacks the second (`body` for 体重, `body
/// weight`): a part of the thing, as a character's English is.
const PART_OF_GLOSS: f32 = 0.3;

/// How much each field's match counts, in field order.
const FIELD_EVIDENCE: [f32; FIELDS] = {
    let mut f = [0.0; FIELDS];
    f[NAME] = 1.0;
    f[DESCRIPTION] = 1.0;
    f[PARAM_NAME] = 0.5;
    f[PARAM_TEXT] = 0.3;
    f
};

/// How a tool's match covers one content unit of the query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnitCover {
    /// The query's word (stemmed) or Chinese word.
    pub word: String,
    /// A word that says little about what is asked (`some`, `一下`).
    pub light: bool,
    /// How well the tool covers it: 1 for the word itself in the name or
    /// description, 0 for not at all.
    pub cover: f32,
    /// The evidence: the term, where it came from and the field, when covered.
    pub by: Option<String>,
    /// How surely the registry has the word: the strongest evidence any
    /// tool (this one or another) has for it, in any field, 0 for none.
    pub known: f32,
}

/// Whether a tool fits the query, and what that rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// Whether the tool fits the query on its own (see the module doc).
    pub fits: bool,
    /// The covered share of the query's content words (0 to 1).
    pub cover: f32,
    /// The request is mostly about words no tool has, and this tool matches
    /// at most one of its words directly: it does not fit, whatever its
    /// cover (see the module doc).
    pub mostly_unknown: bool,
    pub units: Vec<UnitCover>,
    /// The learned term the query covers, when one does: the tool fits on
    /// it whatever its words cover.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub term: Option<TermFit>,
}

/// A learned term of the tool that the query covers (see `learned`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermFit {
    /// The term, as the terms file writes it.
    pub term: String,
    /// The share of the term's words the query covers (at least
    /// [`TERM_COVER`](super::TERM_COVER)).
    pub cover: f32,
}

impl Fit {
    /// Why the tool falls short, or what it fits on, in a few words.
    pub fn reason(&self) -> String {
        let covered: Vec<String> = self
            .units
            .iter()
            .filter(|u| u.cover > 0.0)
            .map(|u| format!("`{}` ({})", u.word, u.by.as_deref().unwrap_or("")))
            .collect();
        let missing: Vec<String> = self
            .units
            .iter()
            .filter(|u| u.cover == 0.0)
            .map(|u| format!("`{}`", u.word))
            .collect();
        let unknown: Vec<String> = self
            .units
            .iter()
            .filter(|u| !u.light && u.known < DIRECT)
            .map(|u| format!("`{}`", u.word))
            .collect();
        let mut s = if let Some(t) = &self.term {
            format!(
                "fits on the learned term `{}` (the query covers {:.0}% of it)",
                t.term,
                t.cover * 100.0
            )
        } else if self.fits {
            format!("fits, covering {:.0}% of the query", self.cover * 100.0)
        } else if covered.is_empty() {
            "falls short: matches none of the query's words".to_string()
        } else if self.mostly_unknown {
            format!(
                "falls short: the query is mostly about what no tool has ({} matched by \
                 none, or only loosely), and this tool matches at most one of its words \
                 directly",
                unknown.join(", ")
            )
        } else {
            format!(
                "falls short: covers {:.0}% of the query (a fit needs {:.0}%, or one word \
                 other than a light one matched directly in its name or description)",
                self.cover * 100.0,
                MIN_COVER * 100.0
            )
        };
        if !covered.is_empty() {
            s += &format!("; matched {}", covered.join(", "));
        }
        if !missing.is_empty() && self.term.is_none() {
            s += &format!("; not {}", missing.join(", "));
        }
        s
    }

    /// Whether every word this match covers directly (light ones aside),
    /// if any, `other` covers directly too.
    fn direct_within(&self, other: &Fit) -> bool {
        self.units.len() == other.units.len()
            && (self.units.iter().zip(&other.units))
                .all(|(m, t)| m.light || m.cover < DIRECT || t.cover >= DIRECT)
    }

    /// Whether this match's words (those it matches at all, light ones
    /// aside) are only some of `other`'s.
    fn matches_less_than(&self, other: &Fit) -> bool {
        let matched =
            |f: &Fit| -> Vec<bool> { f.units.iter().map(|u| !u.light && u.cover > 0.0).collect() };
        let (mine, theirs) = (matched(self), matched(other));
        mine.len() == theirs.len()
            && mine.iter().zip(&theirs).all(|(m, t)| !m || *t)
            && mine != theirs
    }
}

/// [`QueryTerm::strength`], or for a term that needs a second word of its gloss which
/// the tool lacks (not `whole`), a part of it ([`PART_OF_GLOSS`]).
fn gloss_strength(t: &QueryTerm, whole: bool) -> f32 {
    if whole {
        t.strength()
    } else {
        t.strength().min(PART_OF_GLOSS)
    }
}

/// How much a content unit weighs when the known share of a request is
/// counted: a Chinese character alone ([`CHAR_WEIGHT`]) is what is left once
/// the query's dictionary words are read (a measure word, a character of a
/// name the dictionary lacks), and says less than a word. Characters left
/// alone side by side (`run_len` of them in the unit's run, light ones
/// aside) are read as words the dictionary lacks, two characters each
/// ([`RUN_CHAR_WEIGHT`] a character): `杭州` weighs what `杭` alone does.
fn unit_weight(u: &Unit, run_len: usize) -> f32 {
    match (u.run, run_len) {
        (0, _) => 1.0,
        (_, 0 | 1) => CHAR_WEIGHT,
        _ => RUN_CHAR_WEIGHT,
    }
}

/// The learned term of `tool` among `hits` (sorted by tool) that the query
/// covers enough to fit on; a term it covers less only ranks.
fn hit_of(hits: &[(u32, TermHit)], tool: usize) -> Option<&TermHit> {
    hits.binary_search_by_key(&(tool as u32), |(t, _)| *t)
        .ok()
        .map(|k| &hits[k].1)
        .filter(|h| h.whole())
}

/// One ranked tool, and whether a search activates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranked {
    /// The registry index.
    pub tool: usize,
    /// It fits on its own, and is about as good a match as the best.
    pub activate: bool,
}

impl SearchIndex {
    /// [`SearchIndex::rank`], and which of the ranked tools a search
    /// activates (see the module doc): at most `limit`, from the first
    /// `limit` ranked. A tool the query names verbatim is always activated.
    /// Tools for which `free` holds (tools already declared) take part in
    /// the ranking and in the comparison with the best match, and are
    /// marked as a fit the same way, but use up none of `limit`: a search
    /// can then say that the best match is there already.
    pub fn rank_fitting(
        &self,
        query: &str,
        eligible: impl Fn(usize) -> bool,
        limit: usize,
        free: impl Fn(usize) -> bool,
    ) -> Vec<Ranked> {
        let trimmed = super::query::truncate(query, super::query::MAX_QUERY_BYTES).trim();
        let (mut terms, units) = self.query_parts(trimmed);
        let hits = self.term_hits(&terms);
        let ranked = self.rank_scored(trimmed, &mut terms, &hits, eligible);
        let named: Vec<u32> = self.verbatim_names(trimmed).collect();
        let mut out: Vec<Ranked> = Vec::with_capacity(ranked.len());
        // The best match: its score, cover and fit, once judged.
        let mut best: Option<(f32, f32, Fit)> = None;
        let (mut taken, mut seen) = (0, 0);
        for &(tool, score) in &ranked {
            let mut activate = false;
            let free = free(tool);
            if free || taken < limit && seen < limit {
                let verbatim = score.is_infinite() || named.contains(&(tool as u32));
                let fit = self.fit_with(&terms, &units, tool, hit_of(&hits, tool));
                let fits = verbatim || fit.as_ref().is_some_and(|f| f.fits);
                activate = match &best {
                    // The best-ranked tool that fits is the best match.
                    None => fits,
                    Some((s, c, b)) => {
                        verbatim
                            || fit.as_ref().is_some_and(|f| {
                                f.fits
                                    && (score >= CLOSE_SCORE * s || f.cover >= CLOSE_COVER * c)
                                    && !(score < SUBSUMED_SCORE * s && f.matches_less_than(b))
                                    && !(score < SAME_DIRECT_SCORE * s && f.direct_within(b))
                            })
                    }
                };
                if best.is_none()
                    && activate
                    && let Some(f) = fit
                {
                    best = Some((score, f.cover, f));
                }
            }
            if !free {
                taken += usize::from(activate);
                seen += 1;
            }
            out.push(Ranked { tool, activate });
        }
        out
    }

    /// Whether the tool at registry index `tool` fits `query` (see the module
    /// doc). `None` when the tool is not indexed.
    pub fn fit(&self, query: &str, tool: usize) -> Option<Fit> {
        let query = super::query::truncate(query, super::query::MAX_QUERY_BYTES).trim();
        let (terms, units) = self.query_parts(query);
        let hits = self.term_hits(&terms);
        self.fit_with(&terms, &units, tool, hit_of(&hits, tool))
    }

    /// Whether the tool at `tool` has a word the term needs beside it (see
    /// [`QueryTerm::pair`]), or the term needs none.
    fn has_pair(&self, t: &QueryTerm, tool: usize) -> bool {
        if t.pair[0] == NO_PAIR {
            return true;
        }
        let Some(counts) = self.corpus.per_tool.get(tool) else {
            return false;
        };
        t.pair.iter().any(|&p| {
            p != NO_PAIR && p != ABSENT && counts.binary_search_by_key(&p, |(id, _)| *id).is_ok()
        })
    }

    pub(super) fn fit_with(
        &self,
        terms: &[QueryTerm],
        units: &[Unit],
        tool: usize,
        hit: Option<&TermHit>,
    ) -> Option<Fit> {
        let counts = self.corpus.per_tool.get(tool)?;
        let mut cover = vec![(0f32, None::<(u32, Origin, usize)>); units.len()];
        // How surely some indexed tool has the unit: its best evidence.
        let mut known = vec![0f32; units.len()];
        for t in terms {
            if t.unit == NO_UNIT && t.unit2 == NO_UNIT {
                continue;
            }
            let postings = &self.postings[t.id as usize];
            if !postings.is_empty() {
                // As surely as the tool that has it best.
                let whole = postings
                    .iter()
                    .any(|p| self.has_pair(t, (p.tool & !NAME_FLAG) as usize));
                let mut s = gloss_strength(t, whole);
                if t.origin == Origin::Chinese {
                    // A word the registry has only in another language is
                    // known as loosely as a WordNet synonym, except to the
                    // tool that has it (below): a translation may well be
                    // of another sense (`degree` -> 程度), and a request
                    // whose words only translations spread over other
                    // tools is mostly about what none has.
                    s = s.min(KNOWN_BY_TRANSLATION);
                }
                for u in [t.unit, t.unit2] {
                    if u != NO_UNIT {
                        let k = &mut known[u as usize - 1];
                        *k = k.max(s);
                    }
                }
            }
            let Ok(k) = counts.binary_search_by_key(&t.id, |(id, _)| *id) else {
                continue;
            };
            let tf = counts[k].1;
            let Some((field, f)) = (0..FIELDS)
                .filter(|&f| tf[f] > 0)
                .map(|f| (f, FIELD_EVIDENCE[f]))
                .max_by(|a, b| a.1.total_cmp(&b.1))
            else {
                continue;
            };
            let e = gloss_strength(t, self.has_pair(t, tool)) * f;
            for u in [t.unit, t.unit2] {
                if u != NO_UNIT && e > cover[u as usize - 1].0 {
                    cover[u as usize - 1] = (e, Some((t.id, t.origin, field)));
                }
                // For the tool that has it, a translation is its own word.
                if u != NO_UNIT && t.origin == Origin::Chinese {
                    let k = &mut known[u as usize - 1];
                    *k = k.max(e);
                }
            }
        }
        let mut covered = 0.0;
        let (mut heavy, mut heavy_covered) = (0usize, 0.0);
        // The content words light ones aside, each by its weight, and how
        // much of that the registry knows.
        let (mut weight, mut weight_known) = (0f32, 0f32);
        let mut direct = 0usize;
        let mut out = Vec::with_capacity(units.len());
        // How many characters (light ones aside) each run of characters
        // left alone holds.
        let mut run_len = vec![0usize; units.iter().map(|u| u.run as usize + 1).max().unwrap_or(1)];
        for u in units.iter().filter(|u| !is_light(&u.text)) {
            run_len[u.run as usize] += 1;
        }
        for ((u, (c, by)), known) in units.iter().zip(cover).zip(known) {
            let light = is_light(&u.text);
            covered += c;
            if !light {
                heavy += 1;
                heavy_covered += c;
                let w = unit_weight(u, run_len[u.run as usize]);
                weight += w;
                weight_known += w * known;
                // A file's name or type (`notes.md`, `pdf`) alone makes
                // no fit: the request asks for something done with it.
                direct += usize::from(c >= DIRECT && !u.weak);
            }
            out.push(UnitCover {
                word: u.text.clone(),
                light,
                cover: c,
                by: by.map(|(id, origin, field)| {
                    format!(
                        "{} `{}` in {}",
                        origin.as_str(),
                        self.term_text(id),
                        super::corpus::FIELD_NAMES[field]
                    )
                }),
                known,
            });
        }
        let share = |c: f32, n: usize| if n == 0 { 0.0 } else { c / n as f32 };
        let mostly_unknown = direct <= 1 && weight_known < KNOWN_SHARE * weight;
        let cover = share(covered, units.len());
        // A learned term the query covers makes a fit: a request that once
        // led to the tool, or its paraphrase.
        if let Some(h) = hit {
            return Some(Fit {
                fits: true,
                cover: cover.max(h.cover),
                mostly_unknown: false,
                units: out,
                term: Some(TermFit {
                    term: self
                        .learned
                        .as_ref()
                        .map_or("", |l| l.text(h.phrase))
                        .to_string(),
                    cover: h.cover,
                }),
            });
        }
        Some(Fit {
            fits: !mostly_unknown && (direct > 0 || share(heavy_covered, heavy) >= MIN_COVER),
            cover,
            mostly_unknown,
            units: out,
            term: None,
        })
    }
}

#[cfg(test)]
#[path = "fit_tests.rs"]
mod tests;
