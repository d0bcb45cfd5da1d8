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
use super::query::{ABSENT, NO_PAIR, NO_UNIT, Origin, QueryTerm, Unit, W_CEDICT, W_CJK_BIGRAM};
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
        let mut s = if self.fits {
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
        if !missing.is_empty() {
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

/// How strongly a term of this origin and weight stands for its unit.
fn strength(t: &QueryTerm) -> f32 {
    match t.origin {
        // A CJK character alone, or a pair across a function character,
        // weighs less than a word.
        Origin::Word if t.weight < W_CJK_BIGRAM * 0.99 => 0.3,
        Origin::Word | Origin::Joined => 1.0,
        Origin::Vocabulary => 0.8,
        Origin::Cedict if t.weight < W_CEDICT * 0.99 => 0.3,
        Origin::Cedict => 0.7,
        Origin::Prefix => 0.6,
        Origin::WordNet => 0.4,
        Origin::Shape | Origin::Question | Origin::Plural => 0.0,
    }
}

/// [`strength`], or for a term that needs a second word of its gloss which
/// the tool lacks (not `whole`), a part of it ([`PART_OF_GLOSS`]).
fn gloss_strength(t: &QueryTerm, whole: bool) -> f32 {
    if whole {
        strength(t)
    } else {
        strength(t).min(PART_OF_GLOSS)
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
        let ranked = self.rank_scored(trimmed, &mut terms, eligible);
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
                let fit = self.fit_with(&terms, &units, tool);
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
        self.fit_with(&terms, &units, tool)
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

    pub(super) fn fit_with(&self, terms: &[QueryTerm], units: &[Unit], tool: usize) -> Option<Fit> {
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
                let s = gloss_strength(t, whole);
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
                direct += usize::from(c >= DIRECT);
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
                        super::explain::FIELD_NAMES[field]
                    )
                }),
                known,
            });
        }
        let share = |c: f32, n: usize| if n == 0 { 0.0 } else { c / n as f32 };
        let mostly_unknown = direct <= 1 && weight_known < KNOWN_SHARE * weight;
        Some(Fit {
            fits: !mostly_unknown && (direct > 0 || share(heavy_covered, heavy) >= MIN_COVER),
            cover: share(covered, units.len()),
            mostly_unknown,
            units: out,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::registry::{Registry, Tool};
    use crate::search::SearchIndex;
    use serde_json::json;

    fn registry(tools: &[(&str, &str)]) -> Registry {
        Registry::new(
            tools
                .iter()
                .map(|(n, d)| Tool {
                    name: n.to_string(),
                    description: d.to_string(),
                    parameters: json!({"type": "object", "properties": {}}),
                    ..Default::default()
                })
                .collect(),
        )
        .unwrap()
    }

    fn activated(reg: &Registry, idx: &SearchIndex, q: &str) -> Vec<String> {
        idx.rank_fitting(q, |_| true, 4, |_| false)
            .into_iter()
            .filter(|r| r.activate)
            .map(|r| reg.tools()[r.tool].name.clone())
            .collect()
    }

    #[test]
    fn a_match_on_light_words_only_activates_nothing() {
        let reg = registry(&[
            ("toggle_logging", "Turn logging off or on"),
            ("close_page", "Close the current page"),
            ("next_issue", "Show the next issue in a large project"),
        ]);
        let idx = SearchIndex::new(&reg);
        let q = "turn off the living room lights";
        assert!(
            !idx.rank(q, |_| true).is_empty(),
            "the ranking finds loose matches"
        );
        assert_eq!(activated(&reg, &idx, q), Vec::<String>::new());
        let fit = idx.fit(q, 0).unwrap();
        assert!(!fit.fits);
        assert!(fit.reason().starts_with("falls short"), "{}", fit.reason());
        assert!(fit.units.iter().any(|u| u.word == "turn" && u.light));
        // A word the tools have, said directly, fits.
        assert_eq!(
            activated(&reg, &idx, "turn logging off"),
            ["toggle_logging"]
        );
    }

    #[test]
    fn a_search_does_not_pad_with_weak_matches() {
        let reg = registry(&[
            ("glob", "Find files by glob pattern"),
            ("grep", "Search file contents with a regular expression"),
            ("read", "Read a file"),
            ("write", "Write a file"),
        ]);
        let idx = SearchIndex::new(&reg);
        let ranked = idx.rank("find files by glob pattern", |_| true);
        assert!(ranked.len() >= 3, "{ranked:?}");
        assert_eq!(
            activated(&reg, &idx, "find files by glob pattern"),
            ["glob"]
        );
        // Two tools that match as well as each other are both activated.
        assert_eq!(
            activated(&reg, &idx, "read or write a file"),
            ["read", "write"]
        );
    }

    #[test]
    fn names_in_the_query_are_never_held_back() {
        let reg = registry(&[
            ("read_file", "Something else entirely"),
            ("list_files", "List the files of a folder"),
        ]);
        let idx = SearchIndex::new(&reg);
        assert_eq!(activated(&reg, &idx, "read_file"), ["read_file"]);
        let got = activated(&reg, &idx, "the living room read_file");
        assert!(got.contains(&"read_file".to_string()), "{got:?}");
    }

    #[test]
    fn a_request_mostly_about_what_no_tool_has_activates_nothing() {
        let reg = registry(&[
            ("list_cards", "List the saved cards of a dashboard"),
            ("delete_card", "Delete a card from a dashboard"),
            ("list_users", "List the users of the customer account"),
        ]);
        let idx = SearchIndex::new(&reg);
        // `card` is a word the tools have, directly; `charge`, `credit` and
        // `dollars` no tool has at all.
        let q = "charge the credit card 49 dollars";
        assert!(!idx.rank(q, |_| true).is_empty());
        assert_eq!(activated(&reg, &idx, q), Vec::<String>::new());
        let fit = idx.fit(q, 0).unwrap();
        assert!(fit.mostly_unknown && !fit.fits, "{fit:?}");
        let reason = fit.reason();
        assert!(reason.contains("no tool has"), "{reason}");
        assert!(reason.contains("`charg`"), "{reason}");
        // The same one direct match, where the other words are the tools'
        // too, still fits.
        assert_eq!(
            activated(&reg, &idx, "delete the card from my dashboard"),
            ["delete_card"]
        );
        // And so does a tool matching two of the words directly.
        let q = "list the customer cards and their dollars";
        assert!(activated(&reg, &idx, q).contains(&"list_cards".to_string()));
    }

    #[test]
    fn words_known_only_loosely_count_as_little_as_their_evidence() {
        let reg = registry(&[
            ("publish_package", "Publish a package to the registry"),
            ("list_team_members", "List the members of a team"),
            ("list_dashboards", "List the dashboards"),
        ]);
        let idx = SearchIndex::new(&reg);
        // `issue` and `squad` reach the tools only through WordNet
        // (`publish`, `team`), `refund` not at all: of four words the
        // registry knows one for sure.
        let q = "issue a refund to the squad on the dashboard";
        assert!(!idx.rank(q, |_| true).is_empty());
        assert_eq!(activated(&reg, &idx, q), Vec::<String>::new());
        let fit = idx.fit(q, 2).unwrap();
        assert!(fit.mostly_unknown && !fit.fits, "{fit:?}");
        let squad = fit.units.iter().find(|u| u.word == "squad").unwrap();
        assert!(squad.known > 0.0 && squad.known < 0.5, "{squad:?}");
        assert!(fit.reason().contains("`squad`"), "{}", fit.reason());
        // Said with the tools' own words, a request fits.
        let got = activated(&reg, &idx, "list the dashboards of the team");
        assert!(got.contains(&"list_dashboards".to_string()), "{got:?}");
    }

    #[test]
    fn a_chinese_character_left_alone_weighs_half_a_word() {
        let reg = registry(&[
            ("get_weather", "查询城市的天气预报"),
            ("read_file", "读取文件内容"),
        ]);
        let idx = SearchIndex::new(&reg);
        // `杭州` is a name the dictionary lacks: two characters no tool has,
        // which together weigh as much as `天气`, which the tool has.
        let q = "杭州天气";
        let fit = idx.fit(q, 0).unwrap();
        let chars: Vec<&str> = fit
            .units
            .iter()
            .filter(|u| u.known == 0.0)
            .map(|u| u.word.as_str())
            .collect();
        assert_eq!(chars, ["杭", "州"], "{fit:?}");
        assert!(!fit.mostly_unknown, "{fit:?}");
        assert_eq!(activated(&reg, &idx, q), ["get_weather"]);
        // A request whose one word the tools have is among more words no
        // tool has still activates nothing.
        assert_eq!(
            activated(&reg, &idx, "帮我预订杭州西湖边的酒店和机票"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn characters_left_alone_side_by_side_are_read_as_one_word() {
        let reg = registry(&[
            ("get_weather", "查询城市的天气预报"),
            ("read_file", "读取文件内容"),
        ]);
        let idx = SearchIndex::new(&reg);
        // `带伞` (bring an umbrella) and `杭州` are not in the dictionary:
        // each is two characters left alone, side by side, which read as
        // one word the dictionary lacks, half a word each; `天气` the tool
        // has. Counted a character at a time, the request would be two
        // thirds about what no tool has.
        let q = "明天要带伞吗，杭州天气";
        let fit = idx.fit(q, 0).unwrap();
        let alone: Vec<&str> = fit
            .units
            .iter()
            .filter(|u| u.known == 0.0)
            .map(|u| u.word.as_str())
            .collect();
        assert_eq!(alone, ["带", "伞", "杭", "州"], "{fit:?}");
        assert!(!fit.mostly_unknown, "{fit:?}");
        assert_eq!(activated(&reg, &idx, q), ["get_weather"]);
        // A longer run is more words, a pair of characters each: six
        // characters no tool has weigh more than the one word it has.
        let q = "杭州带伞穿靴天气";
        let fit = idx.fit(q, 0).unwrap();
        assert!(fit.mostly_unknown, "{fit:?}");
        assert_eq!(activated(&reg, &idx, q), Vec::<String>::new());
    }

    #[test]
    fn a_weaker_match_on_no_word_the_best_lacks_is_not_loaded() {
        let reg = registry(&[
            ("open_issue", "Open an issue"),
            (
                "tracker_overview",
                "Shows an overview of the tracker, where one can open an issue, read the \
                 long guide about the workflow, its states and labels, and much more",
            ),
            ("create_pull_request", "Create a pull request"),
        ]);
        let idx = SearchIndex::new(&reg);
        // The overview covers `open` and `issue` as fully as the best match
        // does (so it is about as good a match by cover), but scores well
        // under it, and says nothing the best does not.
        let q = "open an issue";
        let ranked = idx.rank_fitting(q, |_| true, 4, |_| false);
        assert_eq!(ranked[1].tool, 1, "{ranked:?}");
        let (best, second) = (idx.explain(q, 0).unwrap(), idx.explain(q, 1).unwrap());
        assert!(
            second.fit.fits && second.fit.cover >= best.fit.cover,
            "{second:?}"
        );
        assert!(second.score < super::CLOSE_SCORE * best.score);
        assert_eq!(activated(&reg, &idx, q), ["open_issue"]);
        // A tool that says directly what the best does not is still loaded.
        let got = activated(&reg, &idx, "open an issue or create a pull request");
        assert!(got.contains(&"create_pull_request".to_string()), "{got:?}");
    }

    #[test]
    fn a_match_on_only_some_of_the_best_matchs_words_is_not_loaded() {
        let reg = registry(&[
            ("install_helm_chart", "Install a Helm chart"),
            ("upgrade_helm_chart", "Upgrade a Helm chart"),
            ("install_package", "Install a package"),
            ("install_plugin", "Install a plugin"),
        ]);
        let idx = SearchIndex::new(&reg);
        // `upgrade_helm_chart` scores close to the best (`install` is a
        // common word here), but matches only words the best has too.
        let q = "install the helm chart";
        let ranked = idx.rank_fitting(q, |_| true, 4, |_| false);
        assert_eq!(ranked[1].tool, 1, "{ranked:?}");
        assert!(idx.fit(q, 1).unwrap().fits);
        assert_eq!(activated(&reg, &idx, q), ["install_helm_chart"]);
        // Tools matching the same words are both loaded, and so is one
        // that matches a word the best does not.
        assert_eq!(
            activated(&reg, &idx, "helm chart"),
            ["install_helm_chart", "upgrade_helm_chart"]
        );
        let mut both = activated(&reg, &idx, "install or upgrade a helm chart");
        both.sort();
        assert_eq!(both, ["install_helm_chart", "upgrade_helm_chart"]);
    }

    #[test]
    fn the_best_match_is_the_best_ranked_tool_that_fits() {
        let reg = registry(&[
            (
                "turn_off_next",
                "Turn off the next one, turn off all, turn off every other",
            ),
            ("heater_control", "Control the heater"),
        ]);
        let idx = SearchIndex::new(&reg);
        let q = "turn off the heater";
        let ranked = idx.rank(q, |_| true);
        assert_eq!(ranked, [0, 1], "the light words rank first");
        assert!(!idx.fit(q, 0).unwrap().fits);
        assert_eq!(activated(&reg, &idx, q), ["heater_control"]);
        // Only among the first `limit` ranked.
        let only_one = idx.rank_fitting(q, |_| true, 1, |_| false);
        assert!(only_one.iter().all(|r| !r.activate), "{only_one:?}");
    }

    #[test]
    fn time_is_what_a_question_about_time_asks() {
        let reg = registry(&[
            (
                "get_current_time",
                "Get the current time in a given timezone",
            ),
            ("browser_wait_for", "Wait for some time to pass"),
            ("read_file", "Read a file"),
        ]);
        let idx = SearchIndex::new(&reg);
        let got = activated(&reg, &idx, "what's the time in London");
        assert!(got.contains(&"get_current_time".to_string()), "{got:?}");
        let fit = idx.fit("what's the time in London", 0).unwrap();
        assert!(
            fit.units.iter().any(|u| u.word == "tim" && !u.light),
            "{fit:?}"
        );
    }

    #[test]
    fn to_star_something_is_to_make_it_a_favourite() {
        let reg = registry(&[
            ("favorite_dashboard", "Mark a dashboard as a favourite"),
            ("list_dashboards", "List the dashboards"),
            ("delete_dashboard", "Delete a dashboard"),
        ]);
        let idx = SearchIndex::new(&reg);
        // `revenue` is a dashboard's name, which no tool has: `star` is what
        // is asked, and tools say it as `favourite` (or `bookmark`).
        let q = "star the revenue dashboard";
        assert_eq!(activated(&reg, &idx, q), ["favorite_dashboard"]);
        let fit = idx.fit(q, 0).unwrap();
        assert!(
            fit.units.iter().any(|u| u.word == "star" && u.cover > 0.7),
            "{fit:?}"
        );
    }

    #[test]
    fn fitting_is_deterministic() {
        let reg = registry(&[
            ("one", "open the door"),
            ("two", "close the window"),
            ("three", "open the door"),
        ]);
        let idx = SearchIndex::new(&reg);
        let first = idx.rank_fitting("open the door", |_| true, 4, |_| false);
        assert_eq!(first.iter().filter(|r| r.activate).count(), 2);
        for _ in 0..5 {
            assert_eq!(
                idx.rank_fitting("open the door", |_| true, 4, |_| false),
                first
            );
            assert_eq!(
                SearchIndex::new(&reg).rank_fitting("open the door", |_| true, 4, |_| false),
                first
            );
        }
    }

    #[test]
    fn the_first_word_of_a_two_word_translation_alone_is_a_part() {
        // 体重 is `body weight`: a request's body is not it, a body weight
        // or a weight is.
        let reg = registry(&[
            (
                "patch_request",
                "Send a new request body to a saved endpoint",
            ),
            ("log_weight", "Log your body weight each morning"),
            ("scale_reading", "Read the weight on the bathroom scale"),
        ]);
        let idx = SearchIndex::new(&reg);
        let q = "体重";
        let body = idx.fit(q, 0).unwrap();
        let unit = body.units.iter().find(|u| u.word == "体重").unwrap();
        assert!(unit.cover > 0.0 && unit.cover < super::DIRECT, "{unit:?}");
        assert!(!body.fits, "{}", body.reason());
        for tool in [1, 2] {
            let fit = idx.fit(q, tool).unwrap();
            assert!(fit.fits, "{}: {}", reg.tools()[tool].name, fit.reason());
        }
        let loaded = activated(&reg, &idx, q);
        assert!(loaded.contains(&"log_weight".to_string()), "{loaded:?}");
        assert!(!loaded.contains(&"patch_request".to_string()), "{loaded:?}");
    }
}
