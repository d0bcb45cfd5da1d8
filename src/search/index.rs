//! Step 3 of the search pipeline: the index. BM25F postings over the
//! corpus's words, counted once per registry and once more per set of tools a
//! context hides ([`SearchIndex::without`]).

use std::collections::HashMap;
use std::sync::Arc;

use crate::registry::Registry;
use crate::terms::TermsFile;

use super::corpus::{Corpus, FIELDS, NAME};
use super::learned::{LearnedIndex, TermWords};

/// Field weights and length-normalisation strengths, in field order
/// (name, description, parameter names, parameter text).
pub(super) const FIELD_WEIGHT: [f32; FIELDS] = [3.0, 1.0, 0.4, 0.15];
const FIELD_B: [f32; FIELDS] = [0.4, 0.75, 0.5, 0.75];
/// BM25 term-frequency saturation.
const K1: f32 = 1.2;

/// The top bit of a posting's tool field marks a term that occurs in the name.
pub(super) const NAME_FLAG: u32 = 1 << 31;

#[derive(Debug, Clone, Copy)]
pub(super) struct Posting {
    /// Registry index, with [`NAME_FLAG`] set when the term is one of the name's.
    pub(super) tool: u32,
    /// `idf * saturated weighted tf`: the score this term gives this tool at
    /// query weight 1.
    pub(super) score: f32,
}

/// The search index of one registry, or of the registry without some tools
/// ([`SearchIndex::without`]): read-only once built.
///
/// Owned, `Send + Sync`; share it behind an `Arc`.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    /// The registry's words, shared by every index derived from it.
    pub(super) corpus: Arc<Corpus>,
    /// Per term, the indexed tools it occurs in, in registry order; empty for
    /// a term only left-out tools have, which is then no term at all.
    pub(super) postings: Vec<Box<[Posting]>>,
    /// Per term, whether it occurs in an indexed tool's name.
    pub(super) in_name: Box<[bool]>,
    /// A word naming a server (see `Corpus::server_words`) -> the indexed
    /// tools of that server, in registry order.
    pub(super) servers: HashMap<Box<str>, Box<[u32]>>,
    /// The learned terms of the indexed tools, when the policy names a terms
    /// file (see `learned`).
    pub(super) learned: Option<Arc<LearnedIndex>>,
}

impl SearchIndex {
    /// Indexes every tool of `registry`.
    pub fn new(registry: &Registry) -> SearchIndex {
        SearchIndex::index(Arc::new(Corpus::new(registry)), &[], None)
    }

    /// Indexes every tool of `registry`, with the learned terms of `terms`
    /// (a policy's terms file) where given: [`SearchIndex::with_terms`]
    /// without counting the registry twice.
    pub fn new_with_terms(registry: &Registry, terms: Option<&TermsFile>) -> SearchIndex {
        let corpus = Corpus::new(registry);
        let words = terms
            .filter(|t| !t.is_empty())
            .map(|t| Arc::new(TermWords::new(&corpus, t)));
        SearchIndex::index(Arc::new(corpus), &[], words)
    }

    /// This index with the learned terms of `terms` (a policy's terms
    /// file) as one more field of each tool, in place of any it had; the
    /// registry's words are not read again. A term of a tool the registry
    /// lacks is left out.
    pub fn with_terms(&self, terms: &TermsFile) -> SearchIndex {
        let words = (!terms.is_empty()).then(|| Arc::new(TermWords::new(&self.corpus, terms)));
        SearchIndex::index(Arc::clone(&self.corpus), &[], words)
    }

    /// This index without learned terms.
    pub fn without_terms(&self) -> SearchIndex {
        SearchIndex::index(Arc::clone(&self.corpus), &[], None)
    }

    /// How many learned terms the indexed tools have.
    pub fn learned_terms(&self) -> usize {
        self.learned.as_ref().map_or(0, |l| l.len())
    }

    /// This index without the tools at the registry indices `hidden`, as if
    /// they were absent (docs/runtime.md): their words are no terms, and term
    /// statistics and prefix expansion see only the others, so
    /// no ranking reveals anything about a hidden tool. Indices stay registry
    /// indices. The registry is not read again: the statistics are counted
    /// from the words this index already holds.
    pub fn without(&self, hidden: &[u32]) -> SearchIndex {
        let words = self.learned.as_ref().map(|l| Arc::clone(&l.words));
        SearchIndex::index(Arc::clone(&self.corpus), hidden, words)
    }

    fn index(corpus: Arc<Corpus>, hidden: &[u32], words: Option<Arc<TermWords>>) -> SearchIndex {
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

        // Words only learned terms have get ids past the corpus's, with no
        // postings.
        let extra = words.as_ref().map_or(0, |w| w.extra_text.len());
        let mut postings: Vec<Vec<Posting>> = df
            .iter()
            .map(|&d| Vec::with_capacity(d as usize))
            .chain(std::iter::repeat_with(Vec::new).take(extra))
            .collect();
        let mut in_name = vec![false; df.len() + extra];
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
        let rarest = (1.0 + (n + 0.5) / 0.5f32).ln();
        let learned = words.map(|w| {
            Arc::new(LearnedIndex::new(w, &visible, |id| {
                match df.get(id as usize) {
                    Some(&d) if d > 0 => idf[id as usize],
                    _ => rarest,
                }
            }))
        });
        SearchIndex {
            learned,
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
    pub(super) fn term(&self, term: &str) -> Option<u32> {
        let learned = |id: u32| self.learned.as_ref().is_some_and(|l| l.has(id));
        match self.corpus.terms.get(term) {
            Some(&id) => (!self.postings[id as usize].is_empty() || learned(id)).then_some(id),
            None => {
                let id = *self.learned.as_ref()?.words.extra.get(term)?;
                learned(id).then_some(id)
            }
        }
    }
}
