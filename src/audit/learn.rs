//! What the sessions of audit logs teach the search: learned terms (see
//! [`crate::terms`] for the file they are written to).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::sessions::{ContextId, Sessions, ToolId};
use crate::terms::normalize;
use crate::{Exposure, ItemRef, Policy, Registry, Table};

/// A term the logs taught: a query (in [`normalize`]d form) that `sessions`
/// sessions followed with the tool.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Learned {
    pub tool: String,
    pub term: String,
    pub sessions: u64,
}

/// The terms the sessions' lessons teach: a query whose search activated
/// nothing or missed, followed in the same session by a load or call of a
/// tool the policy defers in that session's context, is a term of that tool
/// once `min_sessions` different sessions agree. Never a term for a tool the
/// registry lacks, nor for one the policy hides or declares (where the
/// session's context no longer resolves, as a mode the policy dropped, its
/// lessons teach nothing). Sorted by tool, then term: the same lessons in
/// any order give the same list.
pub fn learn(
    sessions: &Sessions,
    policy: &Policy,
    registry: &Registry,
    min_sessions: usize,
) -> Vec<Learned> {
    let table = Table::compile(policy);
    let resolved: Vec<_> = sessions
        .contexts()
        .iter()
        .map(|c| {
            let ctx = c.to_context();
            table.resolve(&ctx).ok()
        })
        .collect();
    let mut deferred: HashMap<(ToolId, ContextId), bool> = HashMap::new();
    let mut agree: BTreeMap<(&str, String), BTreeSet<u32>> = BTreeMap::new();
    for lesson in sessions.lessons() {
        let name = sessions.tool(lesson.tool);
        let is_deferred = *deferred
            .entry((lesson.tool, lesson.context))
            .or_insert_with(|| {
                let Some(tool) = registry.get(name) else {
                    return false;
                };
                let Some(Some(resolved)) = resolved.get(lesson.context as usize) else {
                    return false;
                };
                table.decide(resolved, &ItemRef::from_tool(tool)).exposure == Exposure::Deferred
            });
        if !is_deferred {
            continue;
        }
        let Some(term) = normalize(&lesson.query) else {
            continue;
        };
        agree
            .entry((name, term))
            .or_default()
            .insert(lesson.session);
    }
    agree
        .into_iter()
        .filter(|(_, s)| s.len() >= min_sessions.max(1))
        .map(|((tool, term), s)| Learned {
            tool: tool.to_string(),
            term,
            sessions: s.len() as u64,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sessions read from log lines: `(session, event)` pairs.
    fn sessions(lines: &[(&str, &str)]) -> Sessions {
        let mut sessions = Sessions::new().keep_lessons();
        for (session, event) in lines {
            let text = format!(
                r#"{{"version":1,"session":"{session}","context":{{"mode":null,"bot":null,"flags":[]}},{event}}}"#
            );
            let logged = crate::audit::read::Logged::parse(&text).unwrap();
            sessions.read(&logged.event, None);
        }
        sessions
    }

    const EMPTY: &str = r#""event":"search","query":"Jot memos","names":[],"activated":[],"matches":0,"empty":true,"status":"ok""#;

    fn call(tool: &str) -> String {
        format!(r#""event":"call","tool":"{tool}","outcome":"allowed","status":"ok""#)
    }

    #[test]
    fn only_deferred_tools_the_registry_has_learn_and_only_from_enough_sessions() {
        let policy = Policy::parse("p.policy", "Defer(*)\nHide(secret)\n").unwrap();
        let registry = Registry::from_json(
            r#"[{"name": "notes", "description": "A."}, {"name": "secret", "description": "B."}]"#,
        )
        .unwrap();
        let (notes, secret, gone) = (call("notes"), call("secret"), call("gone"));
        let refused = r#""event":"call","tool":"notes","outcome":"not_found""#;
        let mut lines = Vec::new();
        for s in ["a", "b"] {
            lines.extend([
                (s, EMPTY),
                (s, notes.as_str()),
                (s, secret.as_str()),
                (s, gone.as_str()),
            ]);
        }
        lines.extend([("c", EMPTY), ("c", refused)]);
        let learned = learn(&sessions(&lines), &policy, &registry, 2);
        assert_eq!(
            learned,
            [Learned {
                tool: "notes".into(),
                term: "jot memos".into(),
                sessions: 2
            }]
        );
        assert!(learn(&sessions(&lines), &policy, &registry, 3).is_empty());
        // The sessions read in another order teach the same.
        let mut again = lines[8..].to_vec();
        again.extend_from_slice(&lines[4..8]);
        again.extend_from_slice(&lines[..4]);
        assert_eq!(learn(&sessions(&again), &policy, &registry, 2), learned);
    }
}
