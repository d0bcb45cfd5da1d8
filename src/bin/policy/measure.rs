//! `policy measure --policy F --registry F [--skills F] [--bot B] [--flag X]...`
//!
//! Per mode: the tools and tokens declared were every visible tool declared,
//! against what the policy declares on the first turn plus the catalog that
//! stands for the rest, and the share of tokens saved.

use std::process::ExitCode;

use serde::Serialize;
use toolpolicy::Context;
use toolpolicy::chars::escape;

use crate::common::{self, CliError, Format};
use crate::runtime_args::{EngineArgs, thousands};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    files: EngineArgs,
    /// Measure as this Bot
    #[arg(long)]
    bot: Option<String>,
    /// A runtime flag that is set (repeatable)
    #[arg(long = "flag")]
    flags: Vec<String>,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(Serialize)]
struct Count {
    tools: usize,
    tokens: u64,
}

#[derive(Serialize)]
struct Row {
    mode: Option<String>,
    /// Every tool the context does not hide, all declared.
    all: Count,
    /// What the policy declares on the first turn.
    declared: Count,
    /// The catalog standing for the deferred tools.
    catalog: Count,
    hidden: usize,
    skills_tokens: u64,
    /// `1 - (declared + catalog) / all`, over tool tokens.
    saved: f64,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let engine = args.files.load(args.format)?;
    let snap = engine.snapshot();
    let modes: Vec<Option<String>> = if snap.table().modes().is_empty() {
        vec![None]
    } else {
        snap.table().modes().iter().cloned().map(Some).collect()
    };
    let mut rows = Vec::new();
    for mode in modes {
        let ctx = Context {
            mode: mode.clone(),
            bot: args.bot.clone(),
            flags: args.flags.iter().cloned().collect(),
            grants: None,
        };
        let usage = |e: toolpolicy::ContextError| CliError::Usage(e.to_string());
        let plan = engine
            .session(ctx)
            .map_err(usage)?
            .plan(&engine)
            .map_err(usage)?;
        let t = plan.tokens();
        let hidden = plan.hidden().count();
        let all_tokens = t.all_declared - t.skills;
        let spent = t.declared + t.catalog;
        rows.push(Row {
            mode,
            all: Count {
                tools: snap.registry().len() - hidden,
                tokens: all_tokens,
            },
            declared: Count {
                tools: plan.declared_len(),
                tokens: t.declared,
            },
            catalog: Count {
                tools: plan.deferred_len(),
                tokens: t.catalog,
            },
            hidden,
            skills_tokens: t.skills,
            saved: if all_tokens == 0 {
                0.0
            } else {
                1.0 - spent as f64 / all_tokens as f64
            },
        });
    }
    if args.format == Format::Json {
        common::print_json(&serde_json::json!({
            "policy": args.files.policy.display().to_string(),
            "registry": args.files.registry.display().to_string(),
            "modes": rows,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let header = [
        "mode",
        "all tools",
        "tokens",
        "declared",
        "tokens",
        "catalog",
        "tokens",
        "saved",
    ];
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            [
                r.mode.clone().unwrap_or_else(|| "(no mode)".into()),
                r.all.tools.to_string(),
                thousands(r.all.tokens),
                r.declared.tools.to_string(),
                thousands(r.declared.tokens),
                r.catalog.tools.to_string(),
                thousands(r.catalog.tokens),
                format!("{:.0}%", r.saved * 100.0),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |row: &[&str]| {
        let mut s = format!("{:<w$}", row[0], w = widths[0]);
        for (c, w) in row[1..].iter().zip(&widths[1..]) {
            s += &format!("  {c:>w$}");
        }
        s
    };
    println!("{}", escape(&line(&header)));
    for row in &cells {
        println!("{}", escape(&line(&row.each_ref().map(String::as_str))));
    }
    println!(
        "\n`all`: every tool the context does not hide, declared; `declared`: the policy's first turn; \
         `catalog`: the deferred tools and the tokens of the catalog that lists them; \
         saved: 1 - (declared + catalog) / all"
    );
    Ok(ExitCode::SUCCESS)
}
