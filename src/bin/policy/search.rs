//! `policy search QUERY --policy F --registry F --mode M [--names a,b] [--explain]`

use std::process::ExitCode;

use toolpolicy::chars::escape;
use toolpolicy::runtime::ActivationResult;
use toolpolicy::search::Explanation;

use crate::common::{self, CliError, Format};
use crate::runtime_args::{ContextArgs, EngineArgs, names, session};

#[derive(clap::Args)]
pub struct Args {
    /// What the model searched for (may be empty with `--names`)
    query: String,
    #[command(flatten)]
    files: EngineArgs,
    #[command(flatten)]
    context: ContextArgs,
    /// Exact tool names the model asked for, comma-separated
    #[arg(long, value_delimiter = ',')]
    names: Vec<String>,
    /// Show, per result, which query concepts matched which fields of the
    /// tool and with what weight
    #[arg(long)]
    explain: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let engine = args.files.load(args.format)?;
    let mut session = session(&engine, &args.context)?;
    let result = session
        .search(&engine, &args.query, &args.names)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let explained = if args.explain {
        let results: Vec<&String> = result.activated.iter().chain(&result.matches).collect();
        let explained = session
            .explain_search(&engine, &args.query, &results)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        Some(explained.into_iter().flatten().collect::<Vec<_>>())
    } else {
        None
    };
    match (args.format, explained) {
        (Format::Json, None) => common::print_json(&result)?,
        (Format::Json, Some(explained)) => {
            let mut value =
                serde_json::to_value(&result).map_err(|e| CliError::Usage(e.to_string()))?;
            if let Some(map) = value.as_object_mut() {
                let explain =
                    serde_json::to_value(&explained).map_err(|e| CliError::Usage(e.to_string()))?;
                map.insert("explain".into(), explain);
            }
            common::print_json(&value)?
        }
        (_, explained) => {
            let mut out = human(&result);
            if let Some(explained) = explained {
                out += &shortfall(&result, &explained);
                out += &human_explain(&explained);
            }
            print!("{}", escape(&out))
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// For a search that loaded nothing: the best candidate and why it fell
/// short, or that nothing matched at all.
fn shortfall(result: &ActivationResult, explained: &[Explanation]) -> String {
    if !result.activated.is_empty() || !result.already_active.is_empty() {
        return String::new();
    }
    match explained.first() {
        Some(best) => format!(
            "\nnothing loaded: the best candidate, `{}`, {}\n",
            best.tool,
            best.fit.reason()
        ),
        None => "\nnothing loaded: no tool matches any word of the query\n".to_string(),
    }
}

/// Per result: its score, then each matching concept with its terms (origin,
/// query weight, fields, points), then the bonuses.
fn human_explain(explained: &[Explanation]) -> String {
    let mut out = String::from("\nwhy (score = concepts + bonuses):\n");
    if explained.is_empty() {
        out += "  no ranked result\n";
    }
    for e in explained {
        out += &format!("  {} {:.2}\n", e.tool, e.score);
        out += &format!("    {}\n", e.fit.reason());
        for c in &e.concepts {
            out += &format!("    concept `{}` +{:.2}\n", c.concept, c.score);
            for t in &c.terms {
                out += &format!(
                    "      `{}` ({}, weight {:.2}) in {}: {:.2}\n",
                    t.term,
                    t.origin,
                    t.weight,
                    t.fields.join(", "),
                    t.score
                );
            }
        }
        for b in &e.bonuses {
            out += &format!("    {} +{:.2}\n", b.what, b.points);
        }
    }
    out
}

fn human(result: &ActivationResult) -> String {
    let list = |v: &[String]| names(v.iter().map(String::as_str));
    let mut out = format!("activated:          {}\n", list(&result.activated));
    out += &format!("already active:     {}\n", list(&result.already_active));
    out += &format!("unavailable:        {}\n", list(&result.unavailable));
    if !result.over_limit.is_empty() {
        out += &format!("over the limit:     {}\n", list(&result.over_limit));
    }
    out += &format!("other matches:      {}\n", list(&result.matches));
    out += &format!("remaining deferred: {}\n", result.remaining_deferred);
    out += &format!("\nthe model reads:\n{}\n", indent(&result.text));
    out
}

pub fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
