//! `policy plan --policy F --registry F [--skills F] --mode M [--bot B] [--flag X]... [--tools PROVIDER]`

use std::process::ExitCode;

use toolpolicy::chars::escape;
use toolpolicy::runtime::{Plan, TOKENS_NOTE, parse_provider, percent_saved};

use crate::common::{self, CliError, Format};
use crate::runtime_args::{ContextArgs, EngineArgs, names, session, thousands};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    files: EngineArgs,
    #[command(flatten)]
    context: ContextArgs,
    /// Print the declared tools as a provider's request `tools` array instead:
    /// generic, openai, openai-responses, anthropic, anthropic-deferred
    #[arg(long, value_name = "PROVIDER")]
    tools: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let engine = args.files.load(args.format)?;
    let plan = session(&engine, &args.context)?
        .plan(&engine)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    if let Some(p) = &args.tools {
        let provider = parse_provider(p).ok_or_else(|| {
            CliError::Usage(format!(
                "unknown provider `{p}`: use generic, openai, openai-responses, anthropic or anthropic-deferred"
            ))
        })?;
        common::print_json(&plan.provider_tools(provider))?;
        return Ok(ExitCode::SUCCESS);
    }
    match args.format {
        Format::Json => common::print_json(&plan.report())?,
        _ => print!("{}", escape(&human(&plan))),
    }
    Ok(ExitCode::SUCCESS)
}

fn human(plan: &Plan) -> String {
    let t = plan.tokens();
    let hidden: Vec<&str> = plan.hidden().map(|t| t.name.as_str()).collect();
    let mut out = format!(
        "declared ({} tools, {} tokens):\n  {}\n",
        plan.declared_len(),
        thousands(t.declared),
        names(plan.declared().map(|t| t.name.as_str()))
    );
    out += &format!(
        "deferred ({}):\n  {}\n",
        plan.deferred_len(),
        names(plan.deferred().map(|t| t.name.as_str()))
    );
    out += &format!("hidden ({}):\n  {}\n", hidden.len(), names(hidden));
    out += &format!("\ncatalog ({} tokens):\n", thousands(t.catalog));
    if plan.catalog().is_empty() {
        out += "  (empty: nothing is deferred)\n";
    } else {
        out += plan.catalog();
        out += "\n";
    }
    if !plan.skills_block().is_empty() {
        out += &format!(
            "\nskills ({} tokens):\n{}\n",
            thousands(t.skills),
            plan.skills_block()
        );
    }
    let saved = if t.all_declared == 0 {
        0.0
    } else {
        100.0 * (1.0 - t.total as f64 / t.all_declared as f64)
    };
    out += &format!(
        "\ntokens: {} declared + {} catalog + {} skills = {}; {} had every visible tool been declared ({})\n({TOKENS_NOTE})\n",
        thousands(t.declared),
        thousands(t.catalog),
        thousands(t.skills),
        thousands(t.total),
        thousands(t.all_declared),
        percent_saved(saved),
    );
    out
}
