//! Tool names as OpenAI and Anthropic accept them (docs/registry.md):
//! `^[a-zA-Z0-9_-]{1,64}$`.
//!
//! A registry may hold names both providers reject (MCP allows `.` and `/`,
//! a gateway's `SERVER__tool` names pass 64 characters), and one such name in a
//! request fails every turn of the chat. Each of them is sent under a name made
//! from it: its characters outside the set become `_`, it is cut to leave room
//! for `_` and eight hex digits of a hash of the whole name. The name depends
//! on the tool's own name only, so it stays the same across turns, reloads and
//! processes (the prompt cache keeps its prefix); in the rare case it is
//! already taken, by another tool's real name (real names always win) or an
//! earlier mapped one, the hash is taken again with a counter, in registry
//! order. Provider server tools keep their names: the provider defined them.

use std::collections::{HashMap, HashSet};

use unicode_normalization::UnicodeNormalization;

use crate::registry::Registry;

/// The longest name either provider accepts.
pub const MAX_LEN: usize = 64;

/// Whether OpenAI and Anthropic both accept `name` as a tool name.
pub fn is_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The names a registry's tools are sent under, both ways.
#[derive(Debug, Clone, Default)]
pub struct ProviderNames {
    /// Registry name → the name sent, for the tools whose name is not valid.
    sent: HashMap<String, String>,
    /// The name sent → registry name, for the same tools.
    back: HashMap<String, String>,
}

impl ProviderNames {
    pub fn new(registry: &Registry) -> ProviderNames {
        let tools = registry.tools();
        let taken: HashSet<&str> = tools
            .iter()
            .filter(|t| t.is_server_tool() || is_valid(&t.name))
            .map(|t| t.name.as_str())
            .collect();
        let mut names = ProviderNames::default();
        for tool in tools {
            if tool.is_server_tool() || is_valid(&tool.name) {
                continue;
            }
            let base = base(&tool.name);
            let sent = (0u32..)
                .map(|attempt| format!("{base}_{:08x}", hash(&tool.name, attempt)))
                .find(|candidate| {
                    !taken.contains(candidate.as_str()) && !names.back.contains_key(candidate)
                })
                .unwrap_or_default();
            names.back.insert(sent.clone(), tool.name.clone());
            names.sent.insert(tool.name.clone(), sent);
        }
        names
    }

    /// The name a tool of the registry is sent under: its own when valid.
    pub fn sent<'a>(&'a self, name: &'a str) -> &'a str {
        self.sent.get(name).map_or(name, String::as_str)
    }

    /// The registry name of the tool a provider's call names: a mapped name's
    /// tool, or else the name itself (which the registry may not have).
    pub fn registry_name<'a>(&'a self, sent: &'a str) -> &'a str {
        self.back.get(sent).map_or(sent, String::as_str)
    }

    /// `(registry name, name sent)` for every tool sent under another name,
    /// in no particular order.
    pub fn mapped(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.sent.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.sent.is_empty()
    }
}

/// The readable part of a mapped name: the name in compatibility form
/// (fullwidth `Ｒead` is `Read`), allowed characters kept, runs of others one
/// `_`, cut to leave room for the suffix; `tool` when nothing is left.
fn base(name: &str) -> String {
    let mut out = String::new();
    for c in name.nfkc() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let room = MAX_LEN - 9;
    out.truncate(room);
    let trimmed = out.trim_matches('_');
    if trimmed.is_empty() {
        "tool".to_string()
    } else {
        trimmed.to_string()
    }
}

/// 32 bits of FNV-1a over the name (and the attempt, after the first): fixed
/// by its definition, so every build and platform maps a name the same way.
fn hash(name: &str, attempt: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    };
    name.bytes().for_each(&mut eat);
    if attempt > 0 {
        eat(0);
        attempt.to_le_bytes().into_iter().for_each(&mut eat);
    }
    (h ^ (h >> 32)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Tool;

    fn registry(names: &[&str]) -> Registry {
        Registry::new(
            names
                .iter()
                .map(|n| Tool {
                    name: n.to_string(),
                    ..Tool::default()
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn invalid_names_map_to_valid_stable_distinct_ones_and_back() {
        let long = format!("github__{}", "x".repeat(80));
        let reg = registry(&[
            "Read",
            "fs.read file",
            "fs/read:file",
            "搜索",
            &long,
            "Ｗrite",
        ]);
        let names = ProviderNames::new(&reg);
        assert_eq!(names.sent("Read"), "Read");
        let sent: Vec<&str> = reg.tools().iter().map(|t| names.sent(&t.name)).collect();
        for (tool, s) in reg.tools().iter().zip(&sent) {
            assert!(is_valid(s), "{s}");
            assert_eq!(names.registry_name(s), tool.name);
        }
        let distinct: HashSet<&&str> = sent.iter().collect();
        assert_eq!(distinct.len(), sent.len());
        assert!(sent[1].starts_with("fs_read_file_"), "{}", sent[1]);
        assert!(sent[3].starts_with("tool_"), "{}", sent[3]);
        assert_eq!(sent[4].len(), MAX_LEN);
        assert!(sent[5].starts_with("Write_"), "{}", sent[5]);
        // The same name maps the same way in another registry.
        let other = ProviderNames::new(&registry(&["fs.read file"]));
        assert_eq!(other.sent("fs.read file"), sent[1]);
    }

    #[test]
    fn a_real_name_wins_over_a_mapped_one() {
        let taken = ProviderNames::new(&registry(&["a.b"]))
            .sent("a.b")
            .to_string();
        let reg = registry(&["a.b", &taken]);
        let names = ProviderNames::new(&reg);
        assert_eq!(names.sent(&taken), taken);
        assert_ne!(names.sent("a.b"), taken);
        assert!(is_valid(names.sent("a.b")));
        assert_eq!(names.registry_name(&taken), taken);
    }
}
