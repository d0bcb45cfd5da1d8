//! `policy measure --policy F --registry F [--skills F] [--bot B] [--flag X]...
//! [--grant SEL]... [--engine-tools] [--exposure call|list-changed]`
//!
//! Per mode: the tools and tokens the model is given on the first turn,
//! against two baselines: every tool the context does not hide, declared,
//! and every registry tool declared (no policy). The same figures as
//! `policy gateway --dry-run` and `policy check --max-tokens`.

use std::process::ExitCode;

use serde::Serialize;
use toolpolicy::Context;
use toolpolicy::chars::escape;
use toolpolicy::runtime::{
    DEFAULT_CALL_TOOL, Delivery, FirstTurn, TOKENS_NOTE, supplied_search_name,
};

use crate::common::{self, CliError, Format};
use crate::runtime_args::{EngineArgs, thousands};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
enum ExposureArg {
    /// The gateway's default: the engine's call-through tool is listed too
    #[default]
    Call,
    /// Activated tools are declared from the next step (the Node module's default)
    ListChanged,
}

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
    /// A runtime grant, in selector syntax (repeatable); with any, the chat sees only what they grant
    #[arg(long = "grant")]
    grants: Vec<String>,
    /// The runtime supplies the engine's own search tool (as `policy gateway`
    /// and the Node module do) under the first name a `search` statement
    /// gives: count its definition. Implied when that name is `tool_search`
    #[arg(long)]
    engine_tools: bool,
    /// With the engine's own tools: how activated tools reach the model, as
    /// the gateway's `--exposure` says
    #[arg(long, value_enum, default_value_t)]
    exposure: ExposureArg,
    /// Output format
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
    /// What the model is given on the first turn (see `FirstTurn::listed`).
    listed: Count,
    /// The registry tools the policy declares on the first turn.
    declared: Count,
    /// The catalog standing for the deferred tools (inside the engine's
    /// search tool where the engine supplies it).
    catalog: Count,
    /// Every tool the context does not hide, all declared.
    all: Count,
    hidden: usize,
    /// Every registry tool declared: no policy.
    no_policy: Count,
    skills_tokens: u64,
    /// `1 - listed / all` and `1 - listed / no_policy`, in percent.
    saved: f64,
    saved_no_policy: f64,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let engine = args.files.load(args.format)?;
    let snap = engine.snapshot();
    let modes: Vec<Option<String>> = if snap.table().modes().is_empty() {
        vec![None]
    } else {
        snap.table().modes().iter().cloned().map(Some).collect()
    };
    let supplied = supplied_search_name(snap.table(), args.engine_tools).is_some();
    let own = supplied.then_some(match args.exposure {
        ExposureArg::Call => Delivery::CallThrough(DEFAULT_CALL_TOOL),
        ExposureArg::ListChanged => Delivery::Declared,
    });
    let mut rows = Vec::new();
    for mode in modes {
        let ctx = Context {
            mode: mode.clone(),
            bot: args.bot.clone(),
            flags: args.flags.iter().cloned().collect(),
            grants: (!args.grants.is_empty()).then(|| args.grants.clone()),
        };
        let usage = |e: toolpolicy::ContextError| CliError::Usage(e.to_string());
        let plan = engine
            .session(ctx)
            .map_err(usage)?
            .plan(&engine)
            .map_err(usage)?;
        let t = plan.tokens();
        let first: FirstTurn = plan.first_turn(own);
        let own_tools = own.map_or(0, |d| plan.own_tools(d).len());
        rows.push(Row {
            mode,
            listed: Count {
                tools: plan.declared_len() + own_tools,
                tokens: first.listed,
            },
            declared: Count {
                tools: plan.declared_len(),
                tokens: t.declared,
            },
            catalog: Count {
                tools: plan.deferred_len(),
                tokens: t.catalog,
            },
            all: Count {
                tools: snap.registry().len() - first.hidden,
                tokens: first.all_visible,
            },
            hidden: first.hidden,
            no_policy: Count {
                tools: snap.registry().len(),
                tokens: first.no_policy,
            },
            skills_tokens: t.skills,
            saved: first.saved(first.all_visible),
            saved_no_policy: first.saved(first.no_policy),
        });
    }
    if args.format == Format::Json {
        common::print_json(&serde_json::json!({
            "policy": args.files.policy.display().to_string(),
            "registry": args.files.registry.display().to_string(),
            "engine_tools": supplied,
            "modes": rows,
            "note": TOKENS_NOTE,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let header = [
        "mode",
        "listed",
        "tokens",
        "deferred",
        "hidden",
        "all visible",
        "tokens",
        "saved",
        "no policy",
        "saved",
    ];
    let cells: Vec<[String; 10]> = rows
        .iter()
        .map(|r| {
            [
                r.mode.clone().unwrap_or_else(|| "(no mode)".into()),
                thousands(r.listed.tools as u64),
                thousands(r.listed.tokens),
                thousands(r.catalog.tools as u64),
                thousands(r.hidden as u64),
                thousands(r.all.tools as u64),
                thousands(r.all.tokens),
                format!("{:.1}%", r.saved),
                thousands(r.no_policy.tokens),
                format!("{:.1}%", r.saved_no_policy),
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
    let listed = if supplied {
        "the declared tools and the engine's own tools, whose search tool carries the catalog of the deferred tools"
    } else {
        "the declared tools and the catalog of the deferred tools (the runtime brings its own search tool; `--engine-tools` if the engine supplies it)"
    };
    println!(
        "\n`listed`: what the model is given on the first turn: {listed}; \
         `all visible`: every tool the context does not hide, declared (hidden tools are left out: \
         the policy hides them with or without deferring); `no policy`: every registry tool declared; \
         saved: 1 - listed / the baseline on its left (below zero, the list costs more)\n{TOKENS_NOTE}"
    );
    Ok(ExitCode::SUCCESS)
}
