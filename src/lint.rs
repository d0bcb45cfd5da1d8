//! Lints: findings that do not stop a policy from loading but that its author
//! wants to know about (codes `PL1xx`).

use crate::ast::Span;
use crate::diag::{Code, Diagnostic};
use crate::policy::Policy;
use crate::registry::{Registry, SkillList};

/// Every lint over a policy that loaded; `registry` and `skills` enable the
/// lints that need to know the items.
pub fn lint(
    policy: &Policy,
    registry: Option<&Registry>,
    skills: Option<&SkillList>,
) -> Vec<Diagnostic> {
    let _ = (registry, skills);
    let mut out = Vec::new();
    literal_glob_chars(policy, &mut out);
    out.sort_by_key(|d| (d.span.start, d.code));
    out
}

/// `?`, `[`, `]`, `{`, `}` are literal in this language; someone who wrote them
/// in a quoted pattern most likely meant a wildcard.
fn literal_glob_chars(policy: &Policy, out: &mut Vec<Diagnostic>) {
    for rule in &policy.rules {
        for sel in &rule.selectors {
            if let Some(c) = sel
                .pattern
                .chars()
                .find(|c| matches!(c, '?' | '[' | ']' | '{' | '}'))
            {
                out.push(
                    Diagnostic::new(
                        Code::LiteralGlobChar,
                        Span::new(sel.span.start, sel.span.end),
                        format!("`{c}` in `{}` matches only a literal `{c}`", sel.pattern),
                    )
                    .with_help("did you mean `*`? it is the only wildcard"),
                );
            }
        }
    }
}
