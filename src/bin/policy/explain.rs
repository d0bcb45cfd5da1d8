//! `policy explain [ITEM] --policy F [--mode M] [--bot B] [--flag X]... [--registry F] [--skills F]`
//!
//! With an item: why it is active, deferred or hidden — in the given mode, or
//! in each mode when none is given. Without one (and with a registry): the
//! decision matrix, every tool by every mode.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use toolpolicy::chars::escape;
use toolpolicy::explain::{Explanation, explain, note_lock, note_plan, render};
use toolpolicy::{Context, ItemRef, Registry, SkillList, Table};

use crate::common::{self, CliError, Format};

#[derive(clap::Args)]
pub struct Args {
    /// A tool name, or `skill:NAME`; leave it out (with `--registry`) for the
    /// decision matrix of every tool in every mode
    item: Option<String>,
    /// The policy file
    #[arg(long)]
    policy: PathBuf,
    /// The mode to decide in; without it, every declared mode is shown
    #[arg(long)]
    mode: Option<String>,
    /// The Bot to decide for (`bot *` and its own block apply)
    #[arg(long)]
    bot: Option<String>,
    /// A runtime flag that is set (repeatable)
    #[arg(long = "flag")]
    flags: Vec<String>,
    /// A tool registry (JSON), for `source:` and `hint:` selectors and `defer_loading` hints
    #[arg(long)]
    registry: Option<PathBuf>,
    /// A skill list (JSON)
    #[arg(long)]
    skills: Option<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// The item as the registry or skill list knows it, or by name alone.
fn item_ref<'a>(
    name: &'a str,
    registry: Option<&'a Registry>,
    skills: Option<&'a SkillList>,
) -> ItemRef<'a> {
    match name.strip_prefix("skill:") {
        Some(skill) => skills
            .and_then(|s| s.get(skill))
            .map_or(ItemRef::skill(skill), ItemRef::from_skill),
        None => registry
            .and_then(|r| r.get(name))
            .map_or(ItemRef::tool(name), ItemRef::from_tool),
    }
}

/// A note when the item is looked up in a list that does not hold it.
fn not_listed(
    name: &str,
    registry: Option<&Registry>,
    skills: Option<&SkillList>,
) -> Option<String> {
    let (bare, names, list): (&str, Vec<&str>, &str) = match name.strip_prefix("skill:") {
        Some(s) => {
            let l = skills?;
            if l.get(s).is_some() {
                return None;
            }
            (
                s,
                l.skills().iter().map(|k| k.name.as_str()).collect(),
                "skill list",
            )
        }
        None => {
            let r = registry?;
            if r.get(name).is_some() {
                return None;
            }
            (
                name,
                r.tools().iter().map(|t| t.name.as_str()).collect(),
                "registry",
            )
        }
    };
    let hint = toolpolicy::diag::did_you_mean(bare, names)
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    Some(format!(
        "`{name}` is not in the {list}: decided by its name alone{hint}"
    ))
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let policy = common::load_policy(&args.policy, args.format)?;
    let mut registry = common::load_registry(args.registry.as_deref())?;
    if let Some(r) = &mut registry {
        toolpolicy::lock::mark(r, &policy);
    }
    let skills = common::load_skills(args.skills.as_deref())?;
    let table = Table::compile(&policy);
    let base = Context {
        mode: args.mode.clone(),
        bot: args.bot.clone(),
        flags: args.flags.iter().cloned().collect(),
        grants: None,
    };
    let Some(item_name) = args.item.as_deref() else {
        let Some(registry) = registry.as_ref() else {
            return Err(CliError::Usage(
                "name an item to explain, or give `--registry` for the decision matrix of every tool"
                    .into(),
            ));
        };
        return crate::matrix::run(
            args.mode.as_deref(),
            args.format,
            &policy,
            &table,
            registry,
            skills.as_ref(),
            &base,
        );
    };
    if item_name
        .strip_prefix("skill:")
        .unwrap_or(item_name)
        .is_empty()
    {
        return Err(CliError::Usage(format!(
            "`{item_name}` names nothing: give a tool name or `skill:NAME`"
        )));
    }
    let item = item_ref(item_name, registry.as_ref(), skills.as_ref());
    let note = not_listed(item_name, registry.as_ref(), skills.as_ref());
    let usage = |e: toolpolicy::ContextError| CliError::Usage(e.to_string());
    let explain_in = |ctx: &Context| -> Result<Explanation, CliError> {
        let mut e = explain(&policy, &table, ctx, &item).map_err(usage)?;
        if let Some(r) = &registry {
            note_plan(&mut e, &table, r).map_err(usage)?;
            if !item_name.starts_with("skill:") {
                note_lock(&mut e, &policy, r);
            }
        }
        Ok(e)
    };
    // Without a mode on a policy with modes there is no single answer (a
    // mode-less context does not exist): people get one row per
    // mode; a script asked for one answer, so it must name the mode.
    let per_mode = args.mode.is_none() && !policy.modes.is_empty();
    if per_mode && args.format == Format::Json {
        return Err(crate::runtime_args::mode_required(&policy.modes));
    }
    let explanations: Vec<Explanation> = if per_mode {
        policy
            .modes
            .iter()
            .map(|m| {
                explain_in(&Context {
                    mode: Some(m.clone()),
                    ..base.clone()
                })
            })
            .collect::<Result<_, _>>()?
    } else {
        vec![explain_in(&base)?]
    };
    if let (Format::Json, [main]) = (args.format, explanations.as_slice()) {
        let mut doc = serde_json::to_value(main).map_err(|e| CliError::Usage(e.to_string()))?;
        if let (Some(obj), Some(n)) = (doc.as_object_mut(), &note) {
            obj.insert("note".into(), n.clone().into());
        }
        common::print_json(&doc)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    if let Some(n) = &note {
        let _ = writeln!(out, "note: {n}\n");
    }
    if !per_mode {
        for e in &explanations {
            render(&mut out, &policy, e);
        }
    } else {
        let bot = args
            .bot
            .as_ref()
            .map(|b| format!(" for bot `{b}`"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "`{item_name}` in each mode of {}{bot}:",
            policy.source.name
        );
        let width = explanations
            .iter()
            .map(|e| e.context.mode.as_deref().unwrap_or("").chars().count())
            .max()
            .unwrap_or(0);
        for e in &explanations {
            let rule = e
                .cause
                .rule
                .as_ref()
                .map(|r| format!("`{}` (line {})", r.text, r.line))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {:width$}  {:8}  {:15} {rule}",
                e.context.mode.as_deref().unwrap_or(""),
                e.exposure.to_string(),
                e.cause.kind.as_str(),
            );
        }
        out.push('\n');
        for e in &explanations {
            render(&mut out, &policy, e);
        }
    }
    print!("{}", escape(&out));
    Ok(ExitCode::SUCCESS)
}
