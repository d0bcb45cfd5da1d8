//! The decision matrix of `policy explain --registry F` without an item:
//! every tool of the registry (and skill of the list) by every mode, one
//! symbol per cell, with a legend; in plain form one line per item.

use std::fmt::Write as _;
use std::process::ExitCode;

use serde::Serialize;
use toolpolicy::chars::escape;
use toolpolicy::decision::{CauseKind, Exposure};
use toolpolicy::{Context, ItemRef, Policy, Registry, SkillList, Table};

use crate::common::{self, CliError, Format};
use crate::explain::context_words;

#[derive(Serialize)]
struct Cell {
    mode: Option<String>,
    exposure: Exposure,
    cause: CauseKind,
}

#[derive(Serialize)]
struct Row {
    item: String,
    cells: Vec<Cell>,
}

/// One symbol per decision: guards and search tools apart from other active
/// tools, since they are active whatever the rules say.
fn symbol(exposure: Exposure, cause: CauseKind) -> char {
    match (exposure, cause) {
        (_, CauseKind::Guard) => 'G',
        (_, CauseKind::Search) => 'S',
        (Exposure::Active, _) => '●',
        (Exposure::Deferred, _) => '○',
        (Exposure::Hidden, _) => '·',
    }
}

const LEGEND: &str = "● active (declared from the start)   ○ deferred (in the catalog, found by searching)   · hidden\nG guard (always declared)   S search tool (declared while anything is deferred)";

/// Every tool of the registry (and skill of the list) by every mode (or the
/// one given).
pub fn run(
    mode: Option<&str>,
    format: Format,
    policy: &Policy,
    table: &Table,
    registry: &Registry,
    skills: Option<&SkillList>,
    base: &Context,
) -> Result<ExitCode, CliError> {
    let modes: Vec<Option<String>> = match mode {
        Some(m) => vec![Some(m.to_string())],
        None if policy.modes.is_empty() => vec![None],
        None => policy.modes.iter().cloned().map(Some).collect(),
    };
    let mut resolved = Vec::new();
    for m in &modes {
        let ctx = Context {
            mode: m.clone(),
            ..base.clone()
        };
        resolved.push(
            table
                .resolve(&ctx)
                .map_err(|e| CliError::Usage(e.to_string()))?,
        );
    }
    let items: Vec<(String, ItemRef<'_>)> = registry
        .tools()
        .iter()
        .map(|t| (t.name.clone(), ItemRef::from_tool(t)))
        .chain(
            skills
                .into_iter()
                .flat_map(|l| l.skills())
                .map(|s| (format!("skill:{}", s.name), ItemRef::from_skill(s))),
        )
        .collect();
    let rows: Vec<Row> = items
        .iter()
        .map(|(name, item)| Row {
            item: name.clone(),
            cells: modes
                .iter()
                .zip(&resolved)
                .map(|(m, r)| {
                    let d = table.decide(r, item);
                    Cell {
                        mode: m.clone(),
                        exposure: d.exposure,
                        cause: d.cause,
                    }
                })
                .collect(),
        })
        .collect();
    match format {
        Format::Json => {
            common::print_json(&serde_json::json!({
                "policy": policy.source.name,
                "bot": base.bot,
                "flags": base.flags,
                "modes": modes,
                "rows": rows,
            }))?;
        }
        Format::Plain => {
            let mut out = String::new();
            for row in &rows {
                let cells: Vec<String> = row
                    .cells
                    .iter()
                    .map(|c| match &c.mode {
                        Some(m) => format!("{m}={} ({})", c.exposure, c.cause),
                        None => format!("{} ({})", c.exposure, c.cause),
                    })
                    .collect();
                let _ = writeln!(out, "{}: {}", row.item, cells.join(", "));
            }
            print!("{}", escape(&out));
        }
        Format::Human => print!("{}", escape(&matrix_human(policy, base, &modes, &rows))),
    }
    Ok(ExitCode::SUCCESS)
}

fn matrix_human(policy: &Policy, base: &Context, modes: &[Option<String>], rows: &[Row]) -> String {
    let mut out = String::new();
    let mut ctx = base.clone();
    ctx.mode = None;
    let who = match (&ctx.bot, ctx.flags.is_empty()) {
        (None, true) => String::new(),
        _ => format!(" ({})", context_words(&ctx).trim_start_matches("no mode, ")),
    };
    let _ = writeln!(out, "{}{who}", policy.source.name);
    let names: Vec<&str> = modes
        .iter()
        .map(|m| m.as_deref().unwrap_or("decision"))
        .collect();
    let first = rows
        .iter()
        .map(|r| r.item.chars().count())
        .max()
        .unwrap_or(0)
        .max("deferred".len());
    let widths: Vec<usize> = names.iter().map(|n| n.chars().count().max(1)).collect();
    let _ = write!(out, "  {:first$}", "");
    for (n, w) in names.iter().zip(&widths) {
        let _ = write!(out, "  {n:w$}");
    }
    out.push('\n');
    for row in rows {
        let _ = write!(out, "  {:first$}", row.item);
        for (c, w) in row.cells.iter().zip(&widths) {
            let _ = write!(out, "  {:w$}", symbol(c.exposure, c.cause));
        }
        out.push('\n');
    }
    // Per mode: how many are declared, deferred and hidden.
    for (what, exposure) in [
        ("active", Exposure::Active),
        ("deferred", Exposure::Deferred),
        ("hidden", Exposure::Hidden),
    ] {
        let _ = write!(out, "  {what:first$}");
        for (k, w) in widths.iter().enumerate() {
            let n = rows
                .iter()
                .filter(|r| r.cells[k].exposure == exposure)
                .count();
            let _ = write!(out, "  {n:<w$}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "\n{LEGEND}");
    // Padding is for the columns between cells, not for the ends of lines.
    out.lines()
        .map(|l| l.trim_end().to_string() + "\n")
        .collect()
}
