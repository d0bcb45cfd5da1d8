//! Lints: findings that do not stop a policy from loading but that its author
//! wants to know about (codes `PL1xx`).
//!
//! A lint that cries wolf is worse than none, so each one reports only what it
//! can show: when a finding depends on facts the linter does not have (the
//! items of a registry it was not given, too many flag combinations to walk),
//! it stays quiet. `docs/diagnostics.md` lists every code with an example.
//!
//! | code | lint | needs |
//! |---|---|---|
//! | PL101 | `Defer` with no search tool to find what it defers | |
//! | PL102 | a rule every item of which an earlier line decides | (exact with a registry) |
//! | PL103 | a rule or selector repeated in the same scope and condition | |
//! | PL104 | `Hide`, `Defer` or `Grant` naming a guard or search tool | |
//! | PL105 | a selector that matches nothing | registry / skill list |
//! | PL106 | a `Grant` that grants nothing | registry / skill list |
//! | PL107 | `?`, `[`, `]`, `{`, `}` in a pattern | |
//! | PL108 | deferred tools the catalog has no room for | registry |
//! | PL109 | a first turn over `--max-tokens` | registry |
//! | PL110 | `Defer` or `NoDefer` naming skills, which are never deferred | |
//! | PL121 | a `hint:` selector no registry tool has | registry |
//! | PL122 | `Hide` or `Defer` by `hint:` while the registry carries no annotations | registry |
//! | PL123 | a registry tool the policy's lock does not hold (added or changed) | registry, a lock |
//! | PL124 | a guard or search tool that differs from the lock, which does not apply to it | registry, a lock |
//!
//! [`registry`] reports on the registry itself, whatever the policy: names
//! that read alike (PL115, also a load warning), annotations that are not
//! booleans (PL117, also a load warning) and names OpenAI and Anthropic
//! reject (PL116).
//! | PL120 | a `search` wildcard that makes several registry tools search tools | registry |

mod algebra;
mod budget;
mod guards;
mod lock;
mod names;
mod redundant;
mod search_capture;
mod shadow;
mod terms;
mod world;

use std::path::Path;

use crate::ast::{SelectorKind, Span};
use crate::diag::{Code, Diagnostic, Severity, SourceFile};
use crate::policy::{Policy, RuleKind};
use crate::registry::{LoadWarning, Registry, SkillList};
use crate::runtime::{ProviderNames, is_valid_provider_name};

pub use algebra::{overlap, subsumes};

/// What the linter may know besides the policy.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// The tool registry: selectors are checked against it and shadowing is
    /// decided tool by tool.
    pub registry: Option<&'a Registry>,
    pub skills: Option<&'a SkillList>,
    /// With a registry: warn about a mode whose first turn declares more tokens.
    pub max_tokens: Option<u64>,
    /// The front end adds the engine's own search tool where the registry
    /// has none of its name, as `policy gateway` and the Node module do: the
    /// first tool name a `search` statement gives (`tool_search` without
    /// one) is then satisfied, not missing. A policy whose search tool is
    /// `tool_search`, the engine's own name, is read this way whatever this
    /// says.
    pub engine_search: bool,
}

/// Every lint over a policy that loaded; `registry` and `skills` enable the
/// lints that need to know the items.
pub fn lint(
    policy: &Policy,
    registry: Option<&Registry>,
    skills: Option<&SkillList>,
) -> Vec<Diagnostic> {
    lint_with(
        policy,
        &Options {
            registry,
            skills,
            ..Options::default()
        },
    )
}

/// Every finding about one policy file: its errors, then (when it loads)
/// the lock or terms file it names and the lints: what `policy check`
/// prints and the editor shows, for the file at `path`.
pub fn diagnose(source: &SourceFile, path: &Path, options: &Options<'_>) -> Vec<Diagnostic> {
    let (mut policy, mut diags) = Policy::parse_with_diagnostics(source.clone());
    // The lock it names loads with it: one that cannot be read is an error,
    // never "no lock".
    if !diags.iter().any(|d| d.severity == Severity::Error)
        && let Err(e) = crate::lock::attach(&mut policy, path)
    {
        diags.extend(e.diagnostics);
    }
    if !diags.iter().any(|d| d.severity == Severity::Error) {
        diags.extend(lint_with(&policy, options));
    }
    diags
}

/// [`lint`] with every option.
pub fn lint_with(policy: &Policy, options: &Options<'_>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    literal_glob_chars(policy, &mut out);
    defer_on_skills(policy, &mut out);
    let repeated = redundant::check(policy, &mut out);
    let mut world = world::World::new(policy, options.registry, options.skills);
    world.engine_search = crate::runtime::supplied_search_name(&world.table, options.engine_search)
        .map(str::to_string);
    let guard_only = guards::check(&world, &mut out);
    let skip: Vec<bool> = repeated
        .iter()
        .zip(&guard_only)
        .map(|(a, b)| *a || *b)
        .collect();
    shadow::check(&world, &skip, &mut out);
    names::check(&world, &mut out);
    names::no_annotations(&world, &mut out);
    search_capture::check(&world, &mut out);
    lock::check(&world, &mut out);
    terms::check(&world, &mut out);
    if let Some(registry) = options.registry {
        budget::check(
            policy,
            registry,
            options.skills,
            options.max_tokens,
            options.engine_search,
            &mut out,
        );
    }
    out.sort_by_key(|d| (d.span.start, d.code));
    out
}

/// Findings about a registry whatever the policy, in registry order: its load
/// warnings, and every tool whose name OpenAI or Anthropic would reject,
/// with the name they are sent it under (docs/registry.md).
pub fn registry(registry: &Registry) -> Vec<LoadWarning> {
    let names = ProviderNames::new(registry);
    let mut out: Vec<(usize, LoadWarning)> = registry
        .tools()
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.is_server_tool() && !is_valid_provider_name(&t.name))
        .map(|(i, t)| {
            let sent = names.sent(&t.name);
            let shown = crate::chars::escape_name(&t.name);
            let warning = LoadWarning {
                code: Code::ProviderName,
                path: format!("tools[{i}].name"),
                message: format!(
                    "OpenAI and Anthropic reject the tool name `{shown}`: it is sent to them as `{sent}`"
                ),
                help: Some(format!(
                    "their calls name it `{sent}` (`ProviderNames::registry_name` maps it back); a name matching `^[a-zA-Z0-9_-]{{1,64}}$` is sent as it is"
                )),
            };
            (i, warning)
        })
        .collect();
    out.extend(
        registry
            .warnings()
            .iter()
            .map(|w| (entry_index(&w.path), w.clone())),
    );
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, w)| w).collect()
}

/// `3` for `tools[3].name`.
fn entry_index(path: &str) -> usize {
    path.split(['[', ']'])
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX)
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

/// Skills are listed or hidden, never deferred (the decision order: lines 4 to 7 do not
/// apply to them), so a `skill:` selector in `Defer` or `NoDefer` does nothing.
/// A `source:` selector is left alone: it also picks tools.
fn defer_on_skills(policy: &Policy, out: &mut Vec<Diagnostic>) {
    for rule in &policy.rules {
        if !matches!(rule.kind, RuleKind::Defer | RuleKind::NoDefer) {
            continue;
        }
        for sel in rule
            .selectors
            .iter()
            .filter(|s| s.kind == SelectorKind::Skill)
        {
            let written = policy.source.slice(sel.span);
            out.push(
                Diagnostic::new(
                    Code::NoEffectOnSkill,
                    sel.span,
                    format!(
                        "`{}` has no effect on `{written}`: skills are never deferred",
                        rule.kind.word()
                    ),
                )
                .with_help(format!(
                    "a listed skill is always in the skills block; use `Hide({written})` to keep it from the model, or `Grant` to allow only some skills"
                )),
            );
        }
    }
}

#[cfg(test)]
mod tests;
