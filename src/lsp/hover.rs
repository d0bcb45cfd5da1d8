//! Hover: on a tool selector, the registry tools it matches and `explain`'s
//! answer in the context of the settings; on `hint:`, `source:` and
//! `skill:` selectors, what carries them; on a setting, its meaning and
//! default; on a block's name, the block.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use crate::ast::{SelectorKind, Span};
use crate::explain::{explain, note_lock, note_plan};
use crate::pattern::Pattern;
use crate::{Context, ItemRef, Policy, Registry, Table};

use super::config::Config;
use super::locate::{self, Target};
use super::words;

/// At most this many matching tools are listed, and explained one by one.
const LISTED: usize = 20;

/// The hover's Markdown and the span it covers.
pub fn hover(policy: &Loaded<'_>, offset: usize) -> Option<(String, Span)> {
    let (ast, _) = crate::parse(policy.text);
    match locate::at(&ast, policy.text, offset)? {
        Target::SettingKey { key, span } => {
            let doc = words::setting(&key)?;
            let values = if doc.values.is_empty() {
                String::new()
            } else {
                format!("\n\nvalues: {}", doc.values.join(", "))
            };
            Some((
                format!(
                    "**`{}`**: {}\n\ndefault: `{}`{values}",
                    doc.key, doc.meaning, doc.default
                ),
                span,
            ))
        }
        Target::BlockName { head, span } => {
            let name = locate::head_name(&head);
            let text = match head {
                crate::ast::BlockHead::Mode(_) => format!("mode `{name}`"),
                crate::ast::BlockHead::Bot(None) => "`bot *`: the rules for every Bot".into(),
                crate::ast::BlockHead::Bot(_) => format!("bot `{name}`"),
                crate::ast::BlockHead::When { negated, .. } => format!(
                    "flag `{name}`: the block applies while it is {}set",
                    if negated { "not " } else { "" }
                ),
            };
            Some((format!("{text}\n\n{}", policy.context_line()), span))
        }
        Target::Selector(sel) => {
            let md = match sel.kind {
                SelectorKind::Hint => hint_hover(policy, &sel.pattern),
                SelectorKind::Source => source_hover(policy, &sel.pattern),
                SelectorKind::Skill => skill_hover(policy, &sel.pattern),
                SelectorKind::Tool => tool_hover(policy, &sel.pattern),
            };
            Some((md, sel.span))
        }
    }
}

/// A document with the settings that apply to it, and its policy when it
/// loads without errors.
pub struct Loaded<'a> {
    pub text: &'a str,
    pub config: &'a Config,
    pub policy: Option<Policy>,
    /// The settings' registry, its tools marked against the policy's lock
    /// when it names one, as `policy explain` marks them.
    pub registry: Option<Arc<Registry>>,
}

impl<'a> Loaded<'a> {
    pub fn new(path: &Path, text: &'a str, config: &'a Config) -> Self {
        let policy = Policy::parse(path.display().to_string(), text)
            .ok()
            .and_then(|mut p| crate::lock::attach(&mut p, path).ok().map(|()| p));
        let mut registry = config.registry.clone();
        if let (Some(p), Some(r)) = (&policy, &mut registry)
            && p.lock.is_some()
            && crate::lock::marks(r, p).iter().any(|&m| m)
        {
            crate::lock::mark(Arc::make_mut(r), p);
        }
        Loaded {
            text,
            config,
            policy,
            registry,
        }
    }

    /// The context hover decides in: the settings', with the policy's first
    /// mode when the settings name none and the policy declares some.
    pub fn context(&self) -> Context {
        let s = &self.config.settings;
        let mode = s
            .mode
            .clone()
            .or_else(|| self.policy.as_ref().and_then(|p| p.modes.first().cloned()));
        Context {
            mode,
            bot: s.bot.clone(),
            flags: s.flags.iter().flatten().cloned().collect(),
            grants: None,
        }
    }

    fn context_line(&self) -> String {
        let ctx = self.context();
        let mut words = ctx.describe();
        if words.is_empty() {
            words = "no mode".into();
        }
        let from = match (&self.config.file, self.config.settings.mode.is_some()) {
            (_, false) if ctx.mode.is_some() => format!(
                " (the first mode; set `mode` in `{}` to choose)",
                super::config::FILE
            ),
            (Some(f), _) => format!(" (from `{}`)", f.display()),
            (None, _) => String::new(),
        };
        format!("_context: {words}{from}_")
    }
}

fn tool_hover(l: &Loaded<'_>, pattern: &str) -> String {
    let mut out = format!("tool selector `{pattern}`\n\n");
    let p = Pattern::new(pattern);
    let names: Vec<&str> = match &l.registry {
        Some(r) => r
            .tools()
            .iter()
            .map(|t| t.name.as_str())
            .filter(|n| p.matches(n))
            .collect(),
        None => {
            let _ = writeln!(
                out,
                "no registry: set `registry` in `{}` to see what it matches\n",
                super::config::FILE
            );
            if p.is_exact() { vec![pattern] } else { vec![] }
        }
    };
    if l.registry.is_some() {
        match names.len() {
            0 => {
                let _ = writeln!(out, "matches no tool of the registry\n");
            }
            n => {
                let _ = writeln!(
                    out,
                    "matches {n} registry tool{}\n",
                    if n == 1 { "" } else { "s" }
                );
            }
        }
    }
    let Some(policy) = &l.policy else {
        out.push_str("_the policy has errors: decisions show once it loads_");
        return out;
    };
    let table = Table::compile(policy);
    let ctx = l.context();
    let _ = writeln!(out, "{}\n", l.context_line());
    if let [one] = names.as_slice() {
        out.push_str("```\n");
        out.push_str(&explain_one(l, policy, &table, &ctx, one));
        out.push_str("```\n");
        return out;
    }
    for name in names.iter().take(LISTED) {
        let item = item_ref(l, name);
        match table.resolve(&ctx) {
            Ok(resolved) => {
                let d = table.decide(&resolved, &item);
                let _ = writeln!(out, "- `{name}`: {} ({})", d.exposure, d.cause.as_str());
            }
            Err(e) => {
                let _ = writeln!(out, "{}", e.message);
                break;
            }
        }
    }
    if names.len() > LISTED {
        let _ = writeln!(out, "- and {} more", names.len() - LISTED);
    }
    out
}

fn item_ref<'r>(l: &'r Loaded<'_>, name: &'r str) -> ItemRef<'r> {
    l.registry
        .as_ref()
        .and_then(|r| r.get(name))
        .map_or(ItemRef::tool(name), ItemRef::from_tool)
}

/// `policy explain`'s human answer for one tool.
fn explain_one(
    l: &Loaded<'_>,
    policy: &Policy,
    table: &Table,
    ctx: &Context,
    name: &str,
) -> String {
    let item = item_ref(l, name);
    let mut e = match explain(policy, table, ctx, &item) {
        Ok(e) => e,
        Err(e) => return format!("{}\n", e.message),
    };
    if let Some(r) = &l.registry {
        if let Err(err) = note_plan(&mut e, table, r) {
            return format!("{}\n", err.message);
        }
        note_lock(&mut e, policy, r);
    }
    let mut out = String::new();
    crate::explain::render(&mut out, policy, &e);
    out
}

fn hint_hover(l: &Loaded<'_>, name: &str) -> String {
    let Some(hint) = crate::hint::Hint::parse(name) else {
        return format!(
            "`hint:{name}` is not a hint: the hints are {}",
            words::HINTS.join(", ")
        );
    };
    let mut out = format!(
        "`{hint}`: tools whose annotations say `{}` (MCP's default when absent: {})\n\n",
        hint.annotation(),
        hint.default_value()
    );
    let Some(r) = &l.registry else {
        out.push_str(
            "no registry: set `registry` in the settings file to see which tools carry it",
        );
        return out;
    };
    let carriers: Vec<&str> = r
        .tools()
        .iter()
        .filter(|t| t.hints.contains(hint))
        .map(|t| t.name.as_str())
        .collect();
    list(&mut out, "tool", &carriers);
    out
}

fn source_hover(l: &Loaded<'_>, pattern: &str) -> String {
    let p = Pattern::new(pattern);
    let mut out = format!("`source:{pattern}`: tools and skills from a matching source\n\n");
    if let Some(r) = &l.registry {
        let tools: Vec<&str> = r
            .tools()
            .iter()
            .filter(|t| t.source.as_deref().is_some_and(|s| p.matches(s)))
            .map(|t| t.name.as_str())
            .collect();
        list(&mut out, "tool", &tools);
    }
    if let Some(s) = &l.config.skills {
        let skills: Vec<&str> = s
            .skills()
            .iter()
            .filter(|k| k.source.as_deref().is_some_and(|s| p.matches(s)))
            .map(|k| k.name.as_str())
            .collect();
        list(&mut out, "skill", &skills);
    }
    out
}

fn skill_hover(l: &Loaded<'_>, pattern: &str) -> String {
    let p = Pattern::new(pattern);
    let mut out = format!("`skill:{pattern}`\n\n");
    match &l.config.skills {
        Some(s) => {
            let skills: Vec<&str> = s
                .skills()
                .iter()
                .map(|k| k.name.as_str())
                .filter(|n| p.matches(n))
                .collect();
            list(&mut out, "skill", &skills);
        }
        None => out.push_str("no skill list: set `skills` in the settings file"),
    }
    out
}

fn list(out: &mut String, what: &str, names: &[&str]) {
    let n = names.len();
    let _ = writeln!(out, "{n} {what}{}:", if n == 1 { "" } else { "s" });
    for name in names.iter().take(LISTED) {
        let _ = writeln!(out, "- `{name}`");
    }
    if n > LISTED {
        let _ = writeln!(out, "- and {} more", n - LISTED);
    }
    out.push('\n');
}
