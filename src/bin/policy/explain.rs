//! `policy explain ITEM --policy F [--mode M] [--bot B] [--flag X]... [--registry F] [--skills F]`

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use toolpolicy::explain::{Explanation, Status, explain};
use toolpolicy::{Context, ItemRef, Policy, Registry, SkillList, Table};

use crate::common::{self, CliError, Format};

#[derive(clap::Args)]
pub struct Args {
    /// A tool name, or `skill:NAME`
    item: String,
    #[arg(long)]
    policy: PathBuf,
    /// The mode to decide in; without it, every declared mode is shown
    #[arg(long)]
    mode: Option<String>,
    #[arg(long)]
    bot: Option<String>,
    /// A runtime flag that is set (repeatable)
    #[arg(long = "flag")]
    flags: Vec<String>,
    /// A tool registry (JSON), for `source:` selectors and `defer_loading` hints
    #[arg(long)]
    registry: Option<PathBuf>,
    /// A skill list (JSON)
    #[arg(long)]
    skills: Option<PathBuf>,
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

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let policy = common::load_policy(&args.policy, args.format)?;
    let registry = common::load_registry(args.registry.as_deref())?;
    let skills = common::load_skills(args.skills.as_deref())?;
    let table = Table::compile(&policy);
    let item = item_ref(&args.item, registry.as_ref(), skills.as_ref());
    let base = Context {
        mode: args.mode.clone(),
        bot: args.bot.clone(),
        flags: args.flags.iter().cloned().collect(),
        grants: None,
    };
    let explain_in = |ctx: &Context| {
        explain(&policy, &table, ctx, &item).map_err(|e| CliError::Usage(e.to_string()))
    };
    let main = explain_in(&base)?;
    // Without a mode on a policy with modes, show every mode too.
    let per_mode: Vec<Explanation> = if args.mode.is_none() {
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
        Vec::new()
    };
    if args.format == Format::Json {
        let mut doc = serde_json::to_value(&main).map_err(|e| CliError::Usage(e.to_string()))?;
        if !per_mode.is_empty()
            && let Some(obj) = doc.as_object_mut()
        {
            obj.insert(
                "modes".into(),
                serde_json::to_value(&per_mode).map_err(|e| CliError::Usage(e.to_string()))?,
            );
        }
        common::print_json(&doc)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    if per_mode.is_empty() {
        render(&mut out, &policy, &main);
    } else {
        let _ = writeln!(
            out,
            "`{}` in each mode of {}:",
            main.item, policy.source.name
        );
        let width = per_mode
            .iter()
            .map(|e| e.context.mode.as_deref().unwrap_or("").len())
            .max()
            .unwrap_or(0);
        for e in &per_mode {
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
        for e in &per_mode {
            render(&mut out, &policy, e);
        }
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn context_words(ctx: &Context) -> String {
    let mut parts = Vec::new();
    parts.push(match &ctx.mode {
        Some(m) => format!("mode `{m}`"),
        None => "no mode".to_string(),
    });
    if let Some(b) = &ctx.bot {
        parts.push(format!("bot `{b}`"));
    }
    if !ctx.flags.is_empty() {
        let flags: Vec<String> = ctx.flags.iter().map(|f| format!("`{f}`")).collect();
        parts.push(format!("flags {}", flags.join(", ")));
    }
    parts.join(", ")
}

/// The human form: decision, deciding rule with its source line and a caret,
/// the other matching rules, the settings in effect, and what would change it.
pub fn render(out: &mut String, policy: &Policy, e: &Explanation) {
    let _ = writeln!(
        out,
        "`{}` is {} in {}",
        e.item,
        e.exposure,
        context_words(&e.context)
    );
    let _ = writeln!(out, "  cause: {}", e.cause.kind);
    if let Some(r) = &e.cause.rule {
        let src = policy.source.line_text(r.line);
        let gutter = r.line.to_string().len();
        let _ = writeln!(
            out,
            "  {:gutter$}--> {}:{}:{}",
            "", r.file, r.line, r.column
        );
        let _ = writeln!(out, "  {} | {}", r.line, src);
        let width = r
            .text
            .chars()
            .count()
            .min(src.chars().count().saturating_sub(r.column - 1))
            .max(1);
        let _ = writeln!(
            out,
            "  {:gutter$} | {}{}",
            "",
            " ".repeat(r.column - 1),
            "^".repeat(width)
        );
    }
    let others: Vec<_> = e
        .candidates
        .iter()
        .filter(|c| c.status != Status::Decides)
        .collect();
    if !others.is_empty() {
        let _ = writeln!(out, "  other rules that match:");
        for c in others {
            let _ = writeln!(
                out,
                "    line {:>3}  {:28} {}",
                c.rule.line, c.rule.text, c.why
            );
        }
    }
    let set: Vec<String> = e
        .settings
        .iter()
        .filter(|s| s.from.is_some())
        .map(|s| {
            format!(
                "{} = {} (line {})",
                s.key,
                s.value,
                s.from.as_ref().map_or(0, |r| r.line)
            )
        })
        .collect();
    if !set.is_empty() {
        let _ = writeln!(out, "  settings: {}", set.join(", "));
    }
    for c in &e.change {
        let _ = writeln!(out, "  to change: {c}");
    }
    out.push('\n');
}
