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
//! character alone (of a longer word) or its English, less again. Where the
//! tool has it counts too: its name and description in full, its parameter
//! names and parameter text much less. Each unit weighs as much as its word
//! is rare among the tools (a word no tool has weighs most), so a common word
//! (`file`, `get`, `list`) covers less of a query than the word that says
//! what the request is about.
//!
//! A tool fits the query on its own when it covers one of the query's
//! content words directly ([`DIRECT`] or more) that is not a light word (a
//! word that says little about what is asked: `some`, `next`, `off`,
//! `large`, `turn`, `一下`, `所有`), or when it covers at least [`MIN_COVER`]
//! of the query. A search activates its best-ranked tool only if that fits;
//! then each next one that fits too and is about as good a match as the best:
//! its score at least [`CLOSE_SCORE`] of the best's, or its cover at least
//! [`CLOSE_COVER`] of the best's. A request whose words no tool has (`play
//! some jazz on Spotify`), or whose best match rests only on light words or
//! on weak evidence, activates nothing.

use std::collections::HashSet;
use std::sync::OnceLock;

use serde::Serialize;

use super::corpus::{DESCRIPTION, FIELDS, NAME, PARAM_NAME, PARAM_TEXT};
use super::index::SearchIndex;
use super::query::{NO_UNIT, Origin, QueryTerm, Unit, W_CEDICT, W_CJK_BIGRAM};
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
    "time",
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
}

/// Whether a tool fits the query, and what that rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// Whether the tool fits the query on its own (see the module doc).
    pub fits: bool,
    /// The covered share of the query's content words (0 to 1).
    pub cover: f32,
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
        let mut s = if self.fits {
            format!("fits, covering {:.0}% of the query", self.cover * 100.0)
        } else if covered.is_empty() {
            "falls short: matches none of the query's words".to_string()
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
        let mut best: Option<(f32, f32)> = None;
        let (mut taken, mut seen) = (0, 0);
        // Whether the best match has been judged: the first ranked tool that
        // is not a tool the model has already, or that is one and fits.
        let mut judged = false;
        for &(tool, score) in &ranked {
            let mut activate = false;
            let free = free(tool);
            if (free || taken < limit && seen < limit) && (!judged || best.is_some()) {
                let verbatim = score.is_infinite() || named.contains(&(tool as u32));
                let fit = self.fit_with(&terms, &units, tool);
                let cover = fit.as_ref().map_or(0.0, |f| f.cover);
                let fits = verbatim || fit.is_some_and(|f| f.fits);
                activate = match best {
                    None => fits,
                    Some((s, c)) => {
                        verbatim || fits && (score >= CLOSE_SCORE * s || cover >= CLOSE_COVER * c)
                    }
                };
                if !judged && (activate || !free) {
                    judged = true;
                    best = activate.then_some((score, cover));
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

    pub(super) fn fit_with(&self, terms: &[QueryTerm], units: &[Unit], tool: usize) -> Option<Fit> {
        let counts = self.corpus.per_tool.get(tool)?;
        let mut cover = vec![(0f32, None::<(u32, Origin, usize)>); units.len()];
        for t in terms {
            if t.unit == NO_UNIT && t.unit2 == NO_UNIT {
                continue;
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
            let e = strength(t) * f;
            for u in [t.unit, t.unit2] {
                if u != NO_UNIT && e > cover[u as usize - 1].0 {
                    cover[u as usize - 1] = (e, Some((t.id, t.origin, field)));
                }
            }
        }
        let mut covered = 0.0;
        let (mut heavy, mut heavy_covered) = (0usize, 0.0);
        let mut direct = false;
        let mut out = Vec::with_capacity(units.len());
        for (u, (c, by)) in units.iter().zip(cover) {
            let light = is_light(&u.text);
            covered += c;
            if !light {
                heavy += 1;
                heavy_covered += c;
                direct |= c >= DIRECT;
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
            });
        }
        let share = |c: f32, n: usize| if n == 0 { 0.0 } else { c / n as f32 };
        Some(Fit {
            fits: direct || share(heavy_covered, heavy) >= MIN_COVER,
            cover: share(covered, units.len()),
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
}
