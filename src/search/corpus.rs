//! Step 2 of the search pipeline: the words of a registry, read once: per tool, each term's count in each
//! field and each field's length, and the name lookups. An index (all tools,
//! or all but a context's hidden ones) is counted from this without reading
//! the registry again.

use std::collections::HashMap;

use serde_json::Value;

use crate::registry::Registry;

use super::intent::{self, Intent};
use super::tokenize::{Piece, scan, stem, tokenize_into};

/// The fields of a tool, in order: name, description, parameter names,
/// parameter text.
pub(super) const FIELDS: usize = 4;

pub(super) const NAME: usize = 0;
pub(super) const DESCRIPTION: usize = 1;
pub(super) const PARAM_NAME: usize = 2;
pub(super) const PARAM_TEXT: usize = 3;

/// The field names, in field order, as an explanation shows them.
pub(super) const FIELD_NAMES: [&str; FIELDS] = {
    let mut f = [""; FIELDS];
    f[NAME] = "name";
    f[DESCRIPTION] = "description";
    f[PARAM_NAME] = "parameter names";
    f[PARAM_TEXT] = "parameter text";
    f
};

/// One term of a tool: its id and its count in each field.
pub(super) type TermCounts = (u32, [u16; FIELDS]);

#[derive(Debug, Default)]
pub(super) struct Corpus {
    /// Term -> term id.
    pub terms: HashMap<Box<str>, u32>,
    /// Per tool, its terms (sorted by id) with their counts per field.
    pub per_tool: Vec<Box<[TermCounts]>>,
    /// Per tool, the number of tokens in each field.
    pub lengths: Vec<[u32; FIELDS]>,
    /// Lowercased tool name -> registry indices (case-insensitive duplicates
    /// are possible; case-exact names are looked up through `tools`).
    pub names: HashMap<Box<str>, Vec<u32>>,
    /// Per tool, the name as written and its number of distinct name terms.
    pub tools: Vec<(Box<str>, u16)>,
    /// Lowercased multi-part tool names (with a separator or camelCase) that a
    /// query may mention verbatim among other words.
    pub identifier_names: HashMap<Box<str>, Vec<u32>>,
    /// The terms that occur in some tool name, sorted, for prefix lookups.
    pub name_vocabulary: Box<[(Box<str>, u32)]>,
    /// Per tool, the words that name its server: the stemmed parts of an
    /// `mcp:<server>` source tag (`mcp:notion` -> `notion`), so that a query
    /// naming a product can prefer that server's tools.
    pub server_words: Vec<Box<[Box<str>]>>,
    /// Per tool, whether its name says it reads or changes something.
    pub intents: Vec<Intent>,
}

impl Corpus {
    pub fn new(registry: &Registry) -> Corpus {
        let tools = registry.tools();
        let mut terms: HashMap<Box<str>, u32> = HashMap::new();
        let mut per_tool = Vec::with_capacity(tools.len());
        let mut lengths = Vec::with_capacity(tools.len());
        let mut names_terms = Vec::with_capacity(tools.len());
        let mut in_name: Vec<bool> = Vec::new();
        let mut buf: Vec<String> = Vec::new();
        // (term id, field) for every token occurrence of one tool, then counted.
        let mut occurrences: Vec<(u32, u8)> = Vec::new();

        for tool in tools {
            occurrences.clear();
            let mut len = [0u32; FIELDS];
            let mut add = |text: &str, field: usize, occ: &mut Vec<(u32, u8)>| {
                buf.clear();
                tokenize_into(text, &mut buf);
                len[field] += buf.len() as u32;
                for t in buf.drain(..) {
                    let id = match terms.get(t.as_str()) {
                        Some(&id) => id,
                        None => {
                            let id = terms.len() as u32;
                            terms.insert(t.into_boxed_str(), id);
                            id
                        }
                    };
                    occ.push((id, field as u8));
                }
            };
            add(&tool.name, NAME, &mut occurrences);
            add(&tool.description, DESCRIPTION, &mut occurrences);
            if let Some(props) = tool.parameters.get("properties").and_then(Value::as_object) {
                for (key, schema) in props {
                    add(key, PARAM_NAME, &mut occurrences);
                    if let Some(d) = schema.get("description").and_then(Value::as_str) {
                        add(d, PARAM_TEXT, &mut occurrences);
                    }
                    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
                        for v in values.iter().filter_map(Value::as_str) {
                            add(v, PARAM_TEXT, &mut occurrences);
                        }
                    }
                }
            }
            occurrences.sort_unstable();
            let mut counted: Vec<TermCounts> = Vec::new();
            for &(id, field) in &occurrences {
                match counted.last_mut() {
                    Some((last, tf)) if *last == id => {
                        tf[field as usize] = tf[field as usize].saturating_add(1)
                    }
                    _ => {
                        let mut tf = [0u16; FIELDS];
                        tf[field as usize] = 1;
                        counted.push((id, tf));
                    }
                }
            }
            in_name.resize(terms.len(), false);
            let mut name_terms = 0usize;
            for (id, tf) in &counted {
                if tf[NAME] > 0 {
                    in_name[*id as usize] = true;
                    name_terms += 1;
                }
            }
            names_terms.push(name_terms.min(u16::MAX as usize) as u16);
            per_tool.push(counted.into_boxed_slice());
            lengths.push(len);
        }

        let mut name_vocabulary: Vec<(Box<str>, u32)> = terms
            .iter()
            .filter(|(_, id)| in_name.get(**id as usize).copied().unwrap_or(false))
            .map(|(t, id)| (t.clone(), *id))
            .collect();
        name_vocabulary.sort_unstable();

        let mut names: HashMap<Box<str>, Vec<u32>> = HashMap::new();
        let mut identifier_names: HashMap<Box<str>, Vec<u32>> = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            let lower = tool.name.trim().to_lowercase();
            if is_identifier_like(&tool.name) {
                identifier_names
                    .entry(lower.clone().into_boxed_str())
                    .or_default()
                    .push(i as u32);
            }
            names
                .entry(lower.into_boxed_str())
                .or_default()
                .push(i as u32);
        }

        let server_words = tools
            .iter()
            .map(|t| server_words(t.source.as_deref()))
            .collect();

        let intents = tools.iter().map(|t| intent::of_name(&t.name)).collect();

        Corpus {
            intents,
            server_words,
            terms,
            per_tool,
            lengths,
            names,
            tools: tools
                .iter()
                .zip(names_terms)
                .map(|(t, c)| (t.name.clone().into_boxed_str(), c))
                .collect(),
            identifier_names,
            name_vocabulary: name_vocabulary.into_boxed_slice(),
        }
    }
}

/// The words of an `mcp:<server>` tag that can name the server in a query:
/// its stemmed parts of four letters or more (`mcp:google-maps` -> `googl`,
/// `map` is too short to tell a product).
fn server_words(source: Option<&str>) -> Box<[Box<str>]> {
    let Some(server) = source.and_then(|s| s.strip_prefix("mcp:")) else {
        return Box::default();
    };
    let mut words: Vec<Box<str>> = Vec::new();
    for part in server.split(|c: char| !c.is_alphanumeric()) {
        let part = part.to_lowercase();
        if part.chars().count() >= 4 {
            let s: Box<str> = stem(&part).into();
            if !words.contains(&s) {
                words.push(s);
            }
        }
    }
    words.into_boxed_slice()
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
