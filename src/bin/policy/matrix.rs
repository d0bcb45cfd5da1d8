//! The decision matrix of `policy explain --registry F` without an item:
//! every tool of the registry (and skill of the list) by every mode, one
//! symbol per cell, with a legend; in plain form one line per item.
//!
//! Each context is resolved once and each item matched against the policy's
//! patterns once; a cell is then a walk over the item's matching rules. Rows
//! are written as they are decided, never held together: 50 modes by 10,000
//! tools is 326 MB of JSON.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use serde::Serialize;
use serde::ser::Serializer;
use toolpolicy::chars::escape;
use toolpolicy::decision::{CauseKind, Exposure};
use toolpolicy::explain::NOTHING_DEFERRED;
use toolpolicy::{Context, Decision, ItemRef, Policy, Registry, Resolved, SkillList, Table};

use crate::common::{CliError, Format};

// Fields in alphabetical order, the order the JSON always had.
#[derive(Serialize)]
struct Cell<'a> {
    cause: CauseKind,
    exposure: Exposure,
    mode: Option<&'a str>,
    /// Why a search tool decided active is left out of the plan, as
    /// `explain ITEM` says it (docs/runtime.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    not_declared: Option<&'static str>,
}

#[derive(Serialize)]
struct Row<'a> {
    cells: Vec<Cell<'a>>,
    item: &'a str,
}

/// One symbol per decision: guards and search tools apart from other active
/// tools, since they are active whatever the rules say; a search tool the
/// plan leaves out (nothing deferred in the mode) in lower case.
fn symbol(exposure: Exposure, cause: CauseKind, declared: bool) -> char {
    match (exposure, cause) {
        (_, CauseKind::Guard) => 'G',
        (_, CauseKind::Search) if !declared => 's',
        (_, CauseKind::Search) => 'S',
        (Exposure::Hidden, CauseKind::Lock) => 'L',
        (_, CauseKind::Lock) => 'l',
        (Exposure::Active, _) => '●',
        (Exposure::Deferred, _) => '○',
        (Exposure::Hidden, _) => '·',
    }
}

const LEGEND: &str = "● active (declared from the start)   ○ deferred (in the catalog, found by searching)   · hidden\nG guard (always declared)   S search tool (declared while anything is deferred)   s search tool, not declared: nothing is deferred in the mode";

/// The symbols of a policy with a lock: tools whose definition is not the
/// lock's, decided by the effective `unlocked`.
const LOCK_LEGEND: &str = "L unlocked (not as the lock holds it), hidden   l unlocked, deferred";

/// The items by the contexts, decided one row at a time.
struct Matrix<'a> {
    table: &'a Table,
    modes: Vec<Option<String>>,
    resolved: Vec<Resolved>,
    items: Vec<(String, ItemRef<'a>)>,
    /// Per mode, whether any tool is deferred: the plan declares search
    /// tools only then.
    deferring: Vec<bool>,
}

impl Matrix<'_> {
    /// Item `k`'s decision in every mode, its patterns matched once.
    fn row(&self, k: usize) -> impl Iterator<Item = (Option<&str>, Decision)> + '_ {
        let item = &self.items[k].1;
        let matches = self.table.matching_rules(item);
        self.modes
            .iter()
            .zip(&self.resolved)
            .map(move |(m, r)| (m.as_deref(), self.table.decide_with(r, item, &matches)))
    }

    /// Whether the plan declares a cell's item: all but a search tool in a
    /// mode where nothing is deferred.
    fn declared(&self, mode: usize, d: &Decision) -> bool {
        d.cause != CauseKind::Search || self.deferring[mode]
    }

    fn rows(&self) -> impl Iterator<Item = Row<'_>> + '_ {
        (0..self.items.len()).map(|k| Row {
            item: &self.items[k].0,
            cells: self
                .row(k)
                .enumerate()
                .map(|(i, (mode, d))| Cell {
                    mode,
                    exposure: d.exposure,
                    cause: d.cause,
                    not_declared: (!self.declared(i, &d)).then_some(NOTHING_DEFERRED),
                })
                .collect(),
        })
    }
}

/// Every row, serialized as it is decided.
struct Rows<'a>(&'a Matrix<'a>);

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.rows())
    }
}

/// The JSON document, fields in alphabetical order as well.
#[derive(Serialize)]
struct Document<'a> {
    bot: &'a Option<String>,
    flags: &'a std::collections::BTreeSet<String>,
    modes: &'a [Option<String>],
    policy: &'a str,
    rows: Rows<'a>,
}

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
    // Whether a mode defers anything: a scan that stops at the first
    // deferred tool, each tool's patterns matched once for every mode.
    let mut deferring = vec![false; modes.len()];
    for tool in registry.tools() {
        if deferring.iter().all(|&d| d) {
            break;
        }
        let item = ItemRef::from_tool(tool);
        let matches = table.matching_rules(&item);
        for (d, r) in deferring.iter_mut().zip(&resolved) {
            *d = *d || table.decide_with(r, &item, &matches).exposure == Exposure::Deferred;
        }
    }
    let matrix = Matrix {
        table,
        modes,
        resolved,
        items,
        deferring,
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    let written = match format {
        Format::Json => {
            let doc = Document {
                bot: &base.bot,
                flags: &base.flags,
                modes: &matrix.modes,
                policy: &policy.source.name,
                rows: Rows(&matrix),
            };
            serde_json::to_writer_pretty(&mut out, &doc)
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
        }
        Format::Plain => write_plain(&mut out, &matrix),
        Format::Human => write_human(&mut out, policy, base, &matrix),
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Usage(format!("cannot write to standard output: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

fn write_plain(out: &mut impl Write, matrix: &Matrix<'_>) -> std::io::Result<()> {
    for (k, (item, _)) in matrix.items.iter().enumerate() {
        let cells: Vec<String> = matrix
            .row(k)
            .enumerate()
            .map(|(i, (mode, d))| {
                let note = if matrix.declared(i, &d) {
                    ""
                } else {
                    ", not declared"
                };
                match mode {
                    Some(m) => format!("{m}={} ({}{note})", d.exposure, d.cause),
                    None => format!("{} ({}{note})", d.exposure, d.cause),
                }
            })
            .collect();
        writeln!(out, "{}", escape(&format!("{item}: {}", cells.join(", "))))?;
    }
    Ok(())
}

/// Writes a line without the padding at its end (padding is for the columns
/// between cells), control characters from names escaped.
fn line(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    writeln!(out, "{}", escape(text.trim_end()))
}

fn write_human(
    out: &mut impl Write,
    policy: &Policy,
    base: &Context,
    matrix: &Matrix<'_>,
) -> std::io::Result<()> {
    let mut ctx = base.clone();
    ctx.mode = None;
    let who = match (&ctx.bot, ctx.flags.is_empty()) {
        (None, true) => String::new(),
        _ => format!(" ({})", ctx.describe().trim_start_matches("no mode, ")),
    };
    line(out, &format!("{}{who}", policy.source.name))?;
    let names: Vec<&str> = matrix
        .modes
        .iter()
        .map(|m| m.as_deref().unwrap_or("decision"))
        .collect();
    let first = matrix
        .items
        .iter()
        .map(|(name, _)| name.chars().count())
        .max()
        .unwrap_or(0)
        .max("deferred".len());
    let widths: Vec<usize> = names.iter().map(|n| n.chars().count().max(1)).collect();
    let mut text = format!("  {:first$}", "");
    for (n, w) in names.iter().zip(&widths) {
        text += &format!("  {n:w$}");
    }
    line(out, &text)?;
    // Per mode: how many are declared, deferred and hidden.
    let mut counts = vec![[0usize; 3]; widths.len()];
    for (k, (item, _)) in matrix.items.iter().enumerate() {
        let mut text = format!("  {item:first$}");
        for (i, ((c, (_, d)), w)) in counts
            .iter_mut()
            .zip(matrix.row(k))
            .zip(&widths)
            .enumerate()
        {
            let declared = matrix.declared(i, &d);
            text += &format!("  {:w$}", symbol(d.exposure, d.cause, declared));
            c[d.exposure as usize] += 1;
        }
        line(out, &text)?;
    }
    for (what, exposure) in [
        ("active", Exposure::Active),
        ("deferred", Exposure::Deferred),
        ("hidden", Exposure::Hidden),
    ] {
        let mut text = format!("  {what:first$}");
        for (c, w) in counts.iter().zip(&widths) {
            text += &format!("  {:<w$}", c[exposure as usize]);
        }
        line(out, &text)?;
    }
    writeln!(out, "\n{LEGEND}")?;
    if policy.lock.is_some() {
        writeln!(out, "{LOCK_LEGEND}")?;
    }
    Ok(())
}
