//! Why a tool ranked where it did: per query concept, which terms matched
//! which fields of the tool and what each added, and the bonuses on top. It
//! walks the same terms, postings and bonuses as [`SearchIndex::rank`], so the
//! parts add up to the score the ranking sorted by.

use serde::Serialize;

use super::corpus::{FIELD_NAMES, FIELDS};
use super::fit::Fit;
use super::index::{NAME_FLAG, Posting, SearchIndex};
use super::intent;
use super::query::{MAX_QUERY_BYTES, truncate};
use super::rank::{CONCEPT_REST, SERVER_BONUS, VERBATIM_NAME_BONUS, intent_bonus};

/// One tool's score, taken apart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub tool: String,
    /// The sum of the concepts and bonuses: what the ranking sorts by (a
    /// query equal to a tool name puts that tool first whatever its score).
    pub score: f32,
    pub concepts: Vec<ConceptMatch>,
    pub bonuses: Vec<Bonus>,
    /// Whether the tool fits the query on its own, and what that rests on.
    pub fit: Fit,
}

/// A bonus on top of the concepts: `name coverage`, `read or change, as
/// asked`, ``server `notion` named``, `name in query`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bonus {
    pub what: String,
    pub points: f32,
}

/// One concept of the query (a word with its expansions) that matched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConceptMatch {
    /// The concept's strongest term: the query word itself where it matched.
    pub concept: String,
    /// What the concept added: its best term in full, the rest at a fraction.
    pub score: f32,
    pub terms: Vec<TermMatch>,
}

/// One index term of a concept that the tool has.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermMatch {
    /// The index term (stemmed).
    pub term: String,
    /// Where the term came from: `query`, `vocabulary`, `wordnet`, `cedict`...
    pub origin: &'static str,
    /// The term's query weight.
    pub weight: f32,
    /// The tool's fields that contain it.
    pub fields: Vec<&'static str>,
    /// Weight times the term's BM25F score in this tool.
    pub score: f32,
}

impl Explanation {
    /// One line: the score and what it is made of, strongest concept first
    /// (`\`read_file\` scored 5.10: \`read\` (query: name), \`fil\` (cedict: name, description)`).
    pub fn summary(&self) -> String {
        let mut concepts: Vec<&ConceptMatch> = self.concepts.iter().collect();
        concepts.sort_by(|a, b| b.score.total_cmp(&a.score));
        let parts: Vec<String> = concepts
            .iter()
            .map(|c| {
                let t = &c.terms[0];
                format!("`{}` ({}: {})", t.term, t.origin, t.fields.join(", "))
            })
            .chain(self.bonuses.iter().map(|b| b.what.clone()))
            .collect();
        let made_of = if parts.is_empty() {
            "nothing matched".to_string()
        } else {
            parts.join(", ")
        };
        format!(
            "`{}` scored {:.2}: {made_of}; {}",
            self.tool,
            self.score,
            self.fit.reason()
        )
    }
}

fn bonus(what: &str, points: f32) -> Bonus {
    Bonus {
        what: what.to_string(),
        points,
    }
}

impl SearchIndex {
    /// Explains the score of the tool at registry index `tool` for `query`, or
    /// `None` when the tool is not indexed (out of range, or left out of this
    /// index).
    pub fn explain(&self, query: &str, tool: usize) -> Option<Explanation> {
        let (name, _) = self.corpus.tools.get(tool)?;
        let counts = &self.corpus.per_tool[tool];
        let indexed = counts
            .first()
            .is_none_or(|(id, _)| self.posting(*id, tool).is_some());
        if !indexed {
            return None;
        }
        let query = truncate(query, MAX_QUERY_BYTES).trim();
        let mut terms = self.query_terms(query);
        terms.sort_by_key(|t| t.concept);

        let mut concepts = Vec::new();
        let mut name_hits = 0.0;
        for group in terms.chunk_by(|a, b| a.concept == b.concept) {
            let mut matched: Vec<TermMatch> = Vec::new();
            let mut best_name = 0f32;
            for t in group {
                let Some(p) = self.posting(t.id, tool) else {
                    continue;
                };
                if p.tool & NAME_FLAG != 0 {
                    best_name = best_name.max(t.weight);
                }
                let tf = counts
                    .binary_search_by_key(&t.id, |(id, _)| *id)
                    .map_or([0; FIELDS], |k| counts[k].1);
                matched.push(TermMatch {
                    term: self.term_text(t.id),
                    origin: t.origin.as_str(),
                    weight: t.weight,
                    fields: (0..FIELDS)
                        .filter(|&f| tf[f] > 0)
                        .map(|f| FIELD_NAMES[f])
                        .collect(),
                    score: t.weight * p.score,
                });
            }
            if matched.is_empty() {
                continue;
            }
            name_hits += best_name;
            let best = matched.iter().map(|m| m.score).fold(0.0, f32::max);
            let sum: f32 = matched.iter().map(|m| m.score).sum();
            matched.sort_by(|a, b| b.score.total_cmp(&a.score));
            concepts.push(ConceptMatch {
                concept: matched[0].term.clone(),
                score: best + CONCEPT_REST * (sum - best),
                terms: matched,
            });
        }

        let mut bonuses = Vec::new();
        let hits = self.term_hits(&terms);
        let hit = hits
            .iter()
            .find(|(t, _)| *t as usize == tool)
            .map(|(_, h)| h);
        if let (Some(h), Some(l)) = (hit, &self.learned) {
            let label = if h.whole() {
                format!(
                    "learned term `{}` ({:.0}% covered)",
                    l.text(h.phrase),
                    h.cover * 100.0
                )
            } else {
                format!(
                    "words of learned term `{}` ({:.0}% covered, too little to fit)",
                    l.text(h.phrase),
                    h.cover * 100.0
                )
            };
            bonuses.push(bonus(&label, h.score));
        }
        let cover = self.cover_bonus(tool, name_hits);
        if cover > 0.0 {
            bonuses.push(bonus("name coverage", cover));
        }
        if !concepts.is_empty() || hit.is_some() {
            let intent = intent_bonus(intent::of_query(query), self.corpus.intents[tool]);
            if intent > 0.0 {
                bonuses.push(bonus("read or change, as asked", intent));
            }
        }
        for (server, tools) in self.named_servers(query) {
            if tools.contains(&(tool as u32)) {
                bonuses.push(bonus(&format!("server `{server}` named"), SERVER_BONUS));
            }
        }
        let verbatim = self.verbatim_names(query).filter(|&i| i as usize == tool);
        for _ in verbatim {
            bonuses.push(bonus("name in query", VERBATIM_NAME_BONUS));
        }
        let score = concepts.iter().map(|c| c.score).sum::<f32>()
            + bonuses.iter().map(|b| b.points).sum::<f32>();
        let fit = self.fit(query, tool)?;
        Some(Explanation {
            tool: name.to_string(),
            score,
            concepts,
            bonuses,
            fit,
        })
    }

    fn posting(&self, term: u32, tool: usize) -> Option<&Posting> {
        let list = self.postings.get(term as usize)?;
        list.binary_search_by_key(&(tool as u32), |p| p.tool & !NAME_FLAG)
            .ok()
            .map(|k| &list[k])
    }

    pub(super) fn term_text(&self, id: u32) -> String {
        let base = self.corpus.terms.len() as u32;
        if let Some(w) = self
            .learned
            .as_ref()
            .and_then(|l| l.words.extra_word(id, base))
        {
            return w.to_string();
        }
        self.corpus
            .terms
            .iter()
            .find(|(_, i)| **i == id)
            .map_or_else(String::new, |(t, _)| t.to_string())
    }
}

#[cfg(test)]
mod tests {
    use crate::registry::{Registry, Tool};
    use crate::search::SearchIndex;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> Tool {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ..Default::default()
        }
    }

    #[test]
    fn explanation_adds_up_and_agrees_with_the_ranking() {
        let reg = Registry::new(vec![
            tool("delete_file", "Remove a file from disk"),
            tool("read_file", "Read a file"),
            tool("zh_grep", "搜索文件内容"),
        ])
        .unwrap();
        let idx = SearchIndex::new(&reg);
        for q in [
            "erase the file at path",
            "删除文件",
            "read_file please",
            "files",
        ] {
            crate::search::test_support::assert_explanations_add_up(&reg, &idx, q);
        }
        let e = idx.explain("erase the file at path", 0).unwrap();
        let erase = e
            .concepts
            .iter()
            .find(|c| c.terms.iter().any(|t| t.term == "remov"));
        let erase = erase.expect("erase matches remove through the vocabulary");
        assert!(
            erase
                .terms
                .iter()
                .any(|t| t.fields.contains(&"description"))
        );
        let path = e.concepts.iter().find(|c| c.concept == "path").unwrap();
        assert_eq!(path.terms[0].fields, ["parameter names"]);
        let e = idx.explain("删除文件", 0).unwrap();
        assert!(
            e.concepts
                .iter()
                .flat_map(|c| &c.terms)
                .any(|t| t.origin == "cedict" && t.term == "fil"),
            "{e:?}"
        );
        assert!(idx.explain("x", 9).is_none());
        assert!(idx.without(&[1]).explain("read", 1).is_none());
    }
}
