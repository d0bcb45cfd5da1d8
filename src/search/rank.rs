//! Step 5 of the search pipeline: scoring and ranking. Each concept of the
//! query adds its best term in full and the rest at a fraction, then the
//! bonuses of the request's structure go on top.

use super::index::{NAME_FLAG, SearchIndex};
use super::intent;
use super::learned::TermHit;
use super::query::{MAX_QUERY_BYTES, MAX_QUERY_TERMS, Origin, QueryTerm, truncate};
use super::tokenize;

/// Within one concept (a query word with its expansions) a tool scores its
/// best-matching variant in full and the others at this fraction.
pub(super) const CONCEPT_REST: f32 = 0.3;

/// Bonus for name coverage: the query weight of the terms that hit a tool's
/// name over the number of its name terms (at most 1), applied as
/// `NAME_COVER_BONUS * coverage²`.
const NAME_COVER_BONUS: f32 = 2.5;
/// Bonus for a matched tool whose name's verb is of the kind the query asks
/// for: reading (`which`, `show`, `看看`) or changing (`add`, `delete`, `改`).
const INTENT_BONUS: f32 = 0.8;
/// Bonus for every tool of a server that the query names (`in Notion`).
pub(super) const SERVER_BONUS: f32 = 4.0;
/// Bonus for a query word that is verbatim a multi-part tool name.
pub(super) const VERBATIM_NAME_BONUS: f32 = 1000.0;

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

impl SearchIndex {
    /// Ranks the tools for `query`, best first, considering only tools whose registry
    /// index `i` has `eligible(i) == true`. Returns registry indices of tools with a
    /// positive relevance score only. Deterministic: same input, same output; ties
    /// break by registry order (lower index first).
    pub fn rank(&self, query: &str, eligible: impl Fn(usize) -> bool) -> Vec<usize> {
        let trimmed = truncate(query, MAX_QUERY_BYTES).trim();
        let mut terms = self.query_terms(trimmed);
        let hits = self.term_hits(&terms);
        self.rank_scored(trimmed, &mut terms, &hits, eligible)
            .into_iter()
            .map(|(i, _)| i)
            .collect()
    }

    /// The learned terms the query covers, the best of each tool, by tool
    /// (see `learned`).
    pub(super) fn term_hits(&self, terms: &[QueryTerm]) -> Vec<(u32, TermHit)> {
        let Some(learned) = &self.learned else {
            return Vec::new();
        };
        // The query's own words (a Chinese character or pair too) cover a
        // term's words in full; an expansion as strongly as fitting counts
        // it.
        learned.hits(terms.iter().map(|t| {
            let credit = match t.origin {
                Origin::Word | Origin::Joined => 1.0,
                _ => t.strength(),
            };
            (t.id, credit)
        }))
    }

    /// [`SearchIndex::rank`] on the query's terms and the learned terms it
    /// covers, with each tool's score (a query equal to a tool's name gives
    /// that tool an infinite one).
    pub(super) fn rank_scored(
        &self,
        trimmed: &str,
        terms: &mut [QueryTerm],
        hits: &[(u32, TermHit)],
        eligible: impl Fn(usize) -> bool,
    ) -> Vec<(usize, f32)> {
        if trimmed.is_empty() || self.corpus.tools.is_empty() {
            return Vec::new();
        }

        // Exact whole-query name matches: the case-exact name first, then any
        // case-insensitive ones in registry order.
        let mut exact: Vec<(usize, f32)> = Vec::new();
        if let Some(list) = self.corpus.names.get(trimmed.to_lowercase().as_str()) {
            let mut list: Vec<usize> = list.iter().map(|&i| i as usize).collect();
            list.sort_by_key(|&i| (&*self.corpus.tools[i].0 != trimmed, i));
            exact.extend(
                list.into_iter()
                    .filter(|&i| eligible(i))
                    .map(|i| (i, f32::INFINITY)),
            );
        }

        // Per concept (a query word with its expansions), a tool scores its
        // best variant in full and the others at a fraction, so a word with
        // many synonyms counts about once.
        terms.sort_by_key(|t| t.concept);
        let intent = intent::of_query(trimmed);
        let mut acc = vec![Acc::default(); self.corpus.tools.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut local: Vec<u32> = Vec::new();
        for group in terms.chunk_by(|a: &QueryTerm, b: &QueryTerm| a.concept == b.concept) {
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

        // A learned term the query covers counts as a field would, once.
        // A query that names a server prefers that server's tools, and a
        // tool the query names verbatim comes first.
        let bonuses = hits.iter().map(|(i, h)| (*i, h.score)).chain(
            self.named_servers(trimmed)
                .into_iter()
                .flat_map(|(_, tools)| tools.iter().map(|&i| (i, SERVER_BONUS)))
                .chain(
                    self.verbatim_names(trimmed)
                        .map(|i| (i, VERBATIM_NAME_BONUS)),
                ),
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
            if s <= 0.0 || !s.is_finite() || exact.iter().any(|e| e.0 == i) || !eligible(i) {
                continue;
            }
            ranked.push(((!s.to_bits()) as u64) << 32 | t as u64);
        }
        ranked.sort_unstable();
        exact.extend(ranked.into_iter().map(|k| {
            let i = (k & 0xffff_ffff) as usize;
            (i, f32::from_bits(!((k >> 32) as u32)))
        }));
        exact
    }

    /// The servers the query names (`in Notion`), each once, with their
    /// indexed tools.
    pub(super) fn named_servers(&self, query: &str) -> Vec<(&str, &[u32])> {
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
    pub(super) fn verbatim_names<'a>(&'a self, query: &'a str) -> impl Iterator<Item = u32> + 'a {
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
    pub(super) fn cover_bonus(&self, tool: usize, name_hits: f32) -> f32 {
        let name_terms = self.corpus.tools[tool].1;
        if name_hits > 0.0 && name_terms > 0 {
            let cover = (name_hits / name_terms as f32).min(1.0);
            NAME_COVER_BONUS * cover * cover
        } else {
            0.0
        }
    }
}

/// [`INTENT_BONUS`] where the query's intent is known and the tool's name
/// says the same.
pub(super) fn intent_bonus(query: intent::Intent, tool: intent::Intent) -> f32 {
    if query != intent::Intent::Unknown && query == tool {
        INTENT_BONUS
    } else {
        0.0
    }
}
