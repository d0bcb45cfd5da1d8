//! What the runtime commands (`plan`, `search`, `replay`, `measure`) share:
//! loading an engine from files and building a context from flags.

use std::path::{Path, PathBuf};

use toolpolicy::runtime::{Engine, Session};
use toolpolicy::{Context, SkillList};

use crate::common::{self, CliError, Format};

/// The context flags of `plan` and `search`.
#[derive(clap::Args, Debug, Clone)]
pub struct ContextArgs {
    /// The mode (required when the policy declares modes)
    #[arg(long)]
    pub mode: Option<String>,
    /// The Bot the chat runs as
    #[arg(long)]
    pub bot: Option<String>,
    /// A runtime flag that is set (repeatable)
    #[arg(long = "flag")]
    pub flags: Vec<String>,
    /// A runtime grant, in selector syntax (`Read`, `skill:review`, `source:mcp:*`, `hint:read_only`);
    /// repeatable. With any, the chat sees only what they grant
    #[arg(long = "grant")]
    pub grants: Vec<String>,
}

impl ContextArgs {
    pub fn context(&self) -> Context {
        Context {
            mode: self.mode.clone(),
            bot: self.bot.clone(),
            flags: self.flags.iter().cloned().collect(),
            grants: (!self.grants.is_empty()).then(|| self.grants.clone()),
        }
    }
}

/// The files `plan`, `search` and `measure` build their engine from.
#[derive(clap::Args, Debug, Clone)]
pub struct EngineArgs {
    /// The policy file
    #[arg(long)]
    pub policy: PathBuf,
    /// The tool registry (JSON)
    #[arg(long)]
    pub registry: PathBuf,
    /// The skill list (JSON)
    #[arg(long)]
    pub skills: Option<PathBuf>,
}

impl EngineArgs {
    pub fn load(&self, format: Format) -> Result<Engine, CliError> {
        load_engine(&self.policy, &self.registry, self.skills.as_deref(), format)
    }
}

/// A chat in the context the flags give, after checking that a mode is given
/// where the policy declares modes.
pub fn session(engine: &Engine, ctx: &ContextArgs) -> Result<Session, CliError> {
    let ctx = ctx.context();
    require_mode(engine, &ctx)?;
    engine
        .session(ctx)
        .map_err(|e| CliError::Usage(e.to_string()))
}

/// Loads policy, registry and skills into an engine; policy errors are printed.
pub fn load_engine(
    policy: &Path,
    registry: &Path,
    skills: Option<&Path>,
    format: Format,
) -> Result<Engine, CliError> {
    let policy = common::load_policy(policy, format)?;
    let registry = common::load_registry(Some(registry))?.unwrap_or_default();
    let skills = common::load_skills(skills)?.unwrap_or_else(SkillList::default);
    Ok(Engine::new(policy, registry, skills))
}

/// A plan or search needs a mode when the policy declares some: say which.
pub fn require_mode(engine: &Engine, ctx: &Context) -> Result<(), CliError> {
    let snap = engine.snapshot();
    let modes = snap.table().modes();
    if ctx.mode.is_none() && !modes.is_empty() {
        return Err(mode_required(modes));
    }
    Ok(())
}

/// The error for a command that needs `--mode` on a policy that declares `modes`.
pub fn mode_required(modes: &[String]) -> CliError {
    let list: Vec<String> = modes.iter().map(|m| format!("`{m}`")).collect();
    CliError::Usage(format!(
        "`--mode` is required: the policy declares {}",
        list.join(", ")
    ))
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    toolpolicy::render::thousands(usize::try_from(n).unwrap_or(usize::MAX))
}

/// Names joined for a human line, or `(none)`.
pub fn names<'a>(list: impl IntoIterator<Item = &'a str>) -> String {
    let v: Vec<&str> = list.into_iter().collect();
    if v.is_empty() {
        "(none)".to_string()
    } else {
        v.join(", ")
    }
}
