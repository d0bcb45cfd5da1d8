//! How an agent runtime embeds the engine: one `Engine` for the process, one
//! `Session` per chat, a `Plan` per turn. Run with `cargo run --example embed`.

use std::error::Error;

use toolpolicy::runtime::{CallOutcome, Provider, ResultStatus};
use toolpolicy::{Context, Engine, Policy, Registry, SkillList};

fn main() -> Result<(), Box<dyn Error>> {
    let root = env!("CARGO_MANIFEST_DIR");
    let policy = Policy::parse(
        "pi-desktop.policy",
        std::fs::read_to_string(format!("{root}/policies/pi-desktop.policy"))?,
    )?;
    let registry = Registry::from_json(&std::fs::read_to_string(format!(
        "{root}/examples/registries/pi-desktop.json"
    ))?)?;
    let engine = Engine::new(policy, registry, SkillList::default());

    // A new chat in agent mode.
    let mut chat = engine.session(Context::mode("agent"))?;
    let plan = chat.plan(&engine)?;
    let tools = plan.provider_tools(Provider::OpenAiChat);
    println!(
        "turn 1 declares {} tools, {} tokens:",
        tools.len(),
        plan.tokens().total
    );
    println!("{}\n", plan.catalog());

    // The model calls the search tool; the result text goes back to it.
    let found = chat.search(&engine, "open a page in the browser", &[] as &[&str])?;
    println!("search: {}\n", found.text);

    // The model calls a tool that was just activated, and it succeeds.
    if let CallOutcome::Allowed = chat.call(&engine, "BrowserPreview")? {
        chat.record_result(&engine, "BrowserPreview", ResultStatus::Ok)?;
    }
    let plan = chat.plan(&engine)?;
    let names: Vec<&str> = plan.declared().map(|t| t.name.as_str()).collect();
    println!("turn 2 declares: {}", names.join(", "));

    // Persist the chat, and resume it after a restart: the evidence rebuilds it.
    let saved = serde_json::to_string(&chat.state())?;
    let resumed = engine.resume(serde_json::from_str(&saved)?)?;
    println!("resumed with: {}", resumed.activated().join(", "));
    Ok(())
}
