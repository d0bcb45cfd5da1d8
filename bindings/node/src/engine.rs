//! `Engine`: the policy, the tool registry and the skill list, shared by
//! every chat of a host. Hot reload swaps them whole; a reload that fails
//! throws and leaves the last good engine in place.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use napi::bindgen_prelude::{Function, Unknown};
use napi::{Env, Result};
use napi_derive::napi;
use serde_json::Value;
use toolpolicy::audit::writer::AuditLog;
use toolpolicy::explain::{explain, note_plan};
use toolpolicy::{ItemRef, LoadErrors, Policy, Registry, SessionState, SkillList};

use crate::args;
use crate::cache::Builder;
use crate::error::{self, Diag};
use crate::out::camel_case;
use crate::session::Session;

/// The shared engine: build one per process (or per policy) and a
/// `Session` per chat.
#[napi]
pub struct Engine {
    pub(crate) inner: Arc<toolpolicy::Engine>,
    /// The policy's file name, for the diagnostics of a reload.
    file: String,
    /// Where the policy stands, for the lock it names (`lock = "..."` is
    /// relative to its folder): the policy file, or for policy text the
    /// `dir` option's folder; `None` for text without one.
    place: Option<PathBuf>,
    /// What turns its sessions' plans into JavaScript objects.
    builder: Arc<Builder>,
    /// The audit log its sessions write to, when one was asked for and
    /// could be opened.
    audit: Option<Arc<AuditLog>>,
}

/// The keys of the audit options (of `EngineOptions` and of `fromFiles`).
const AUDIT_KEYS: [&str; 2] = ["audit", "auditNoQueries"];

/// Opens the audit log the options name, if any. A log that cannot be
/// opened is a warning (`process.emitWarning`), never a throw: the engine
/// works on without one.
fn open_audit(
    env: &Env,
    opts: Option<&napi::bindgen_prelude::Object>,
    what: &str,
) -> Result<Option<Arc<AuditLog>>> {
    let path = args::opt_string(
        env,
        args::field(opts, "audit")?.as_ref(),
        &format!("{what}.audit"),
    )?;
    let no_queries = args::opt_bool(
        env,
        args::field(opts, "auditNoQueries")?.as_ref(),
        &format!("{what}.auditNoQueries"),
    )?
    .unwrap_or(false);
    let Some(path) = path else {
        return Ok(None);
    };
    match toolpolicy::host::open_audit(&path, !no_queries) {
        Ok(log) => {
            // Before the process exits, what is queued is written (a few
            // seconds at most); the hook does not keep the log open.
            let weak: Weak<AuditLog> = Arc::downgrade(&log);
            env.add_env_cleanup_hook(weak, |weak| {
                if let Some(log) = weak.upgrade() {
                    log.flush(Duration::from_secs(2));
                }
            })?;
            Ok(Some(log))
        }
        Err(warning) => {
            warn(env, &warning)?;
            Ok(None)
        }
    }
}

/// A Node warning (`process.emitWarning`, type `ToolPolicyWarning`).
fn warn(env: &Env, message: &str) -> Result<()> {
    let emit: Function<String, Unknown> =
        env.run_script("(m) => process.emitWarning(m, 'ToolPolicyWarning')")?;
    emit.call(message.to_string())?;
    Ok(())
}

impl Engine {
    fn with_audit(
        inner: toolpolicy::Engine,
        file: String,
        place: Option<PathBuf>,
        audit: Option<Arc<AuditLog>>,
    ) -> Engine {
        if let Some(log) = &audit {
            inner.set_audit(Some(log.hook()));
        }
        Engine {
            inner: Arc::new(inner),
            file,
            place,
            builder: Arc::default(),
            audit,
        }
    }
}

fn read(env: &Env, path: &str) -> Result<Vec<u8>> {
    toolpolicy::host::read(path).map_err(|f| error::raise(env, f))
}

fn read_text(env: &Env, path: &str) -> Result<String> {
    toolpolicy::host::read_text(path).map_err(|f| error::raise(env, f))
}

fn registry(env: &Env, file: &str, text: &str) -> Result<Registry> {
    Registry::from_json(text).map_err(|e| error::list(env, file, &e))
}

fn skills(env: &Env, file: &str, text: &str) -> Result<SkillList> {
    SkillList::from_json(text).map_err(|e| error::list(env, file, &e))
}

/// Reads the lock `policy` names from beside `place` (the policy file, or a
/// file in the folder the `dir` option names); policy text without a folder
/// that names a lock is an error at the `lock` setting.
fn attach_lock(policy: &mut Policy, place: Option<&Path>) -> std::result::Result<(), LoadErrors> {
    toolpolicy::lock::attach_at(
        policy,
        place,
        "pass the folder the lock path is relative to as `options.dir`, or build the engine with `Engine.fromFiles`",
    )
}

#[napi]
impl Engine {
    /// An engine from policy text and the tools: an array of definitions
    /// in any registry shape (generic, Anthropic, OpenAI, MCP), an object
    /// with a `tools` array, or JSON text of either.
    #[napi(
        constructor,
        ts_args_type = "policyText: string, tools: Array<object> | { tools: Array<object> } | string, options?: EngineOptions"
    )]
    pub fn new(
        env: Env,
        policy_text: Unknown,
        tools: Unknown,
        options: Option<Unknown>,
    ) -> Result<Engine> {
        let text = args::string(&env, &policy_text, "policyText")?;
        let tools = args::json_text(&env, &tools, "tools")?;
        let opts = args::options(
            &env,
            options.as_ref(),
            "options",
            &["file", "skills", "dir", AUDIT_KEYS[0], AUDIT_KEYS[1]],
        )?;
        let file = args::opt_string(
            &env,
            args::field(opts.as_ref(), "file")?.as_ref(),
            "options.file",
        )?
        .unwrap_or_else(|| "policy".to_string());
        let dir = args::opt_string(
            &env,
            args::field(opts.as_ref(), "dir")?.as_ref(),
            "options.dir",
        )?;
        if dir.as_deref() == Some("") {
            return Err(error::usage(
                &env,
                "`options.dir` names no folder",
                Some(
                    "give the folder the policy's relative paths (its `lock`) are read from".into(),
                ),
            ));
        }
        // The policy as if it were a file in that folder.
        let place = dir.map(|d| toolpolicy::lock::text_place(Path::new(&d), &file));
        let skill_list = match args::field(opts.as_ref(), "skills")? {
            Some(v) => skills(
                &env,
                "skills",
                &args::json_text(&env, &v, "options.skills")?,
            )?,
            None => SkillList::default(),
        };
        let mut policy = Policy::parse(file.as_str(), text).map_err(|e| error::policy(&env, &e))?;
        attach_lock(&mut policy, place.as_deref()).map_err(|e| error::policy(&env, &e))?;
        let registry = registry(&env, "tools", &tools)?;
        let audit = open_audit(&env, opts.as_ref(), "options")?;
        Ok(Engine::with_audit(
            toolpolicy::Engine::new(policy, registry, skill_list),
            file,
            place,
            audit,
        ))
    }

    /// An engine from a policy file, a registry file and maybe a skill list
    /// file; diagnostics name the files. `options` may name an audit log.
    #[napi(
        factory,
        ts_args_type = "policyPath: string, registryPath: string, skillsPath?: string | null, options?: AuditOptions"
    )]
    pub fn from_files(
        env: Env,
        policy_path: Unknown,
        registry_path: Unknown,
        skills_path: Option<Unknown>,
        options: Option<Unknown>,
    ) -> Result<Engine> {
        let policy_path = args::string(&env, &policy_path, "policyPath")?;
        let registry_path = args::string(&env, &registry_path, "registryPath")?;
        let skills_path = args::opt_string(&env, skills_path.as_ref(), "skillsPath")?;
        let opts = args::options(&env, options.as_ref(), "options", &AUDIT_KEYS)?;
        let mut policy = Policy::from_bytes(policy_path.as_str(), &read(&env, &policy_path)?)
            .map_err(|e| error::policy(&env, &e))?;
        let place = PathBuf::from(&policy_path);
        attach_lock(&mut policy, Some(&place)).map_err(|e| error::policy(&env, &e))?;
        let text = read_text(&env, &registry_path)?;
        let registry = registry(&env, &registry_path, &text)?;
        let skill_list = match skills_path {
            Some(path) => {
                let text = read_text(&env, &path)?;
                skills(&env, &path, &text)?
            }
            None => SkillList::default(),
        };
        let audit = open_audit(&env, opts.as_ref(), "options")?;
        Ok(Engine::with_audit(
            toolpolicy::Engine::new(policy, registry, skill_list),
            policy_path,
            Some(place),
            audit,
        ))
    }

    /// Waits until the audit log's queued events are written (at most
    /// `withinMs`, 5000 by default) and returns how many events were
    /// dropped so far because the log was not written in time; 0 without
    /// a log. Queued events are also written when the process exits.
    #[napi(ts_args_type = "withinMs?: number")]
    pub fn flush_audit(&self, env: Env, within_ms: Option<Unknown>) -> Result<f64> {
        let within = match within_ms.filter(|v| !args::absent(v)) {
            Some(v) => args::number(&env, &v, "withinMs")?,
            None => 5000.0,
        };
        let Some(log) = &self.audit else {
            return Ok(0.0);
        };
        log.flush(Duration::from_secs_f64(
            within.clamp(0.0, 600_000.0) / 1000.0,
        ));
        if let Some(e) = log.take_error() {
            warn(&env, &format!("the audit log could not be written: {e}"))?;
        }
        Ok(log.dropped() as f64)
    }

    /// A new chat in a context; throws on a mode the policy does not declare
    /// (a policy with modes needs one).
    #[napi(ts_args_type = "context?: SessionContext")]
    pub fn session(&self, env: Env, context: Option<Unknown>) -> Result<Session> {
        let ctx = args::context(&env, context.as_ref(), "context")?;
        let inner = self
            .inner
            .session(ctx)
            .map_err(|e| error::context(&env, &e))?;
        Ok(Session::new(
            Arc::clone(&self.inner),
            Arc::clone(&self.builder),
            inner,
        ))
    }

    /// A chat from its saved `state()` (an object or JSON text): activations
    /// are rebuilt from its evidence, as after a restart.
    #[napi(ts_args_type = "state: SessionState | string")]
    pub fn resume(&self, env: Env, state: Unknown) -> Result<Session> {
        let text = args::json_text(&env, &state, "state")?;
        let state: SessionState = serde_json::from_str(&text).map_err(|e| {
            error::usage(
                &env,
                format!("bad session state: {e}"),
                Some("pass what `session.state()` returned".into()),
            )
        })?;
        let inner = self
            .inner
            .resume(state)
            .map_err(|e| error::context(&env, &e))?;
        Ok(Session::new(
            Arc::clone(&self.inner),
            Arc::clone(&self.builder),
            inner,
        ))
    }

    /// Why an item (a tool name, or `skill:NAME`) is active, deferred or
    /// hidden in a context: the `explain` JSON contract, keys in camelCase.
    #[napi(
        ts_args_type = "item: string, context?: SessionContext",
        ts_return_type = "Explanation"
    )]
    pub fn explain(&self, env: Env, item: Unknown, context: Option<Unknown>) -> Result<Value> {
        let name = args::string(&env, &item, "item")?;
        let ctx = args::context(&env, context.as_ref(), "context")?;
        if name.strip_prefix("skill:").unwrap_or(&name).is_empty() {
            return Err(error::usage(
                &env,
                format!("`{name}` names nothing"),
                Some("give a tool name or `skill:NAME`".into()),
            ));
        }
        let snap = self.inner.snapshot();
        let item = match name.strip_prefix("skill:") {
            Some(skill) => snap
                .skills()
                .get(skill)
                .map_or(ItemRef::skill(skill), ItemRef::from_skill),
            None => snap
                .registry()
                .get(&name)
                .map_or(ItemRef::tool(&name), ItemRef::from_tool),
        };
        let mut e = explain(snap.policy(), snap.table(), &ctx, &item)
            .map_err(|e| error::context(&env, &e))?;
        note_plan(&mut e, snap.table(), snap.registry()).map_err(|e| error::context(&env, &e))?;
        let value = serde_json::to_value(&e)
            .map_err(|e| error::usage(&env, format!("cannot write the explanation: {e}"), None))?;
        Ok(camel_case(value))
    }

    /// Replaces the policy; throws with its diagnostics and keeps the last
    /// good one when it does not load. Sessions use it from their next call.
    /// The lock it names is read again, from the same folder as at
    /// construction: call it after the lock file changed, too.
    #[napi(ts_args_type = "text: string, file?: string")]
    pub fn reload_policy(&mut self, env: Env, text: Unknown, file: Option<Unknown>) -> Result<()> {
        let text = args::string(&env, &text, "text")?;
        let file =
            args::opt_string(&env, file.as_ref(), "file")?.unwrap_or_else(|| self.file.clone());
        let loaded = Policy::parse(file.as_str(), text).and_then(|mut policy| {
            attach_lock(&mut policy, self.place.as_deref()).map(|()| policy)
        });
        let codes = match &loaded {
            Ok(_) => Vec::new(),
            Err(e) => e.diagnostics.iter().map(|d| d.code.to_string()).collect(),
        };
        self.inner.emit(toolpolicy::audit::EventKind::Reload {
            what: "policy".into(),
            ok: loaded.is_ok(),
            codes,
        });
        self.inner
            .set_policy(loaded.map_err(|e| error::policy(&env, &e))?);
        self.file = file;
        Ok(())
    }

    /// Replaces the registry (an array of definitions or JSON text); throws
    /// and keeps the last good one when it does not load. Sessions keep
    /// their activations by name.
    #[napi(ts_args_type = "tools: Array<object> | { tools: Array<object> } | string")]
    pub fn reload_registry(&self, env: Env, tools: Unknown) -> Result<()> {
        let text = args::json_text(&env, &tools, "tools")?;
        self.inner
            .reload_registry(&text)
            .map_err(|e| error::list(&env, "tools", &e))
    }

    /// Replaces the skill list; throws and keeps the last good one.
    #[napi(ts_args_type = "skills: Array<object> | string")]
    pub fn reload_skills(&self, env: Env, skills: Unknown) -> Result<()> {
        let text = args::json_text(&env, &skills, "skills")?;
        self.inner
            .reload_skills(&text)
            .map_err(|e| error::list(&env, "skills", &e))
    }

    /// What loaded but reads badly: registry and skill names that differ
    /// only by case or Unicode form (`PL115`), one diagnostic each.
    #[napi(ts_return_type = "Array<Diagnostic>")]
    pub fn warnings(&self) -> Value {
        let snap = self.inner.snapshot();
        let all = snap
            .registry()
            .warnings()
            .iter()
            .map(|w| ("tools", w))
            .chain(snap.skills().warnings().iter().map(|w| ("skills", w)));
        let diags: Vec<Diag> = all
            .map(|(file, w)| Diag {
                code: Some(w.code.as_str().to_string()),
                severity: "warning",
                file: Some(file.to_string()),
                path: Some(w.path.clone()),
                ..Diag::plain(w.message.clone(), w.help.clone())
            })
            .collect();
        serde_json::to_value(diags).unwrap_or(Value::Array(Vec::new()))
    }

    /// The report of audit logs (`policy report`'s JSON, keys in
    /// camelCase), with this engine's policy and registry: each suggested
    /// `NoDefer`/`Defer` line is tried on the policy, and a search miss
    /// names the words its tool lacks. `logs` are file paths and
    /// `{ text, name? }` objects of log text, read in the order given.
    #[napi(
        ts_args_type = "logs: Array<string | AuditLogText>, options?: AuditReportOptions",
        ts_return_type = "AuditReport"
    )]
    pub fn audit_report(&self, env: Env, logs: Unknown, options: Option<Unknown>) -> Result<Value> {
        report(&env, &logs, options.as_ref(), Some(&self.inner))
    }

    /// Whether an audit log is open (one was named and could be opened).
    #[napi(getter)]
    pub fn auditing(&self) -> bool {
        self.audit.is_some()
    }

    /// The modes the policy declares, in file order.
    #[napi(getter)]
    pub fn modes(&self) -> Vec<String> {
        self.inner.snapshot().policy().modes.clone()
    }

    /// The tool names of the registry, in registry order.
    #[napi(getter)]
    pub fn tool_names(&self) -> Vec<String> {
        let snap = self.inner.snapshot();
        snap.registry()
            .tools()
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }
}

/// The lock file's text for these tools (any registry shape, as `Engine`
/// takes them): what `policy lock --registry` writes, one entry a line in
/// name order. A host writes it where its policy's `lock` names, after a
/// person has reviewed the tools.
#[napi(ts_args_type = "tools: Array<object> | { tools: Array<object> } | string")]
#[cfg_attr(test, allow(dead_code))]
pub fn lock_text(env: Env, tools: Unknown) -> Result<String> {
    let text = args::json_text(&env, &tools, "tools")?;
    let registry = registry(&env, "tools", &text)?;
    Ok(toolpolicy::lock::Lock::from_registry(&registry).to_text())
}

/// The report of audit logs without a policy or registry: `policy report`'s
/// JSON, keys in camelCase. `logs` are file paths and `{ text, name? }`
/// objects of log text, read in the order given; `engine.auditReport` also
/// tries each suggested line on the engine's policy.
#[napi(
    ts_args_type = "logs: Array<string | AuditLogText>, options?: AuditReportOptions",
    ts_return_type = "AuditReport"
)]
// Only JavaScript calls it; unit tests build no module registration.
#[cfg_attr(test, allow(dead_code))]
pub fn audit_report(env: Env, logs: Unknown, options: Option<Unknown>) -> Result<Value> {
    report(&env, &logs, options.as_ref(), None)
}

fn report(
    env: &Env,
    logs: &Unknown,
    options: Option<&Unknown>,
    engine: Option<&toolpolicy::Engine>,
) -> Result<Value> {
    let logs = args::logs(env, logs, "logs")?;
    let options = args::report_options(env, options, "options")?;
    let report =
        toolpolicy::host::audit_report(&logs, engine, options).map_err(|f| error::raise(env, f))?;
    let value = serde_json::to_value(&report)
        .map_err(|e| error::usage(env, format!("cannot write the report: {e}"), None))?;
    Ok(camel_case(value))
}

/// A text file read the way the engine reads its own inputs: under the
/// library's 64 MiB cap, as UTF-8, without a leading byte-order mark. For a
/// host's own files (a settings file, a policy it passes as text), so that
/// `/dev/zero` or an endless pipe is refused there too.
#[napi(ts_args_type = "path: string")]
// Only JavaScript calls it; unit tests build no module registration.
#[cfg_attr(test, allow(dead_code))]
pub fn read_input(env: Env, path: Unknown) -> Result<String> {
    let path = args::string(&env, &path, "path")?;
    read_text(&env, &path)
}

/// For `bench.mjs`: the same calls as its JavaScript ones, timed in Rust in
/// the same process, so that the difference (what JavaScript adds) is
/// measured under the same load. Nanoseconds per call.
#[napi(js_name = "__timeInRust")]
// Only JavaScript calls it; unit tests build no module registration.
#[cfg_attr(test, allow(dead_code))]
pub fn time_in_rust(engine: &Engine, what: String, query: String, iterations: u32) -> f64 {
    toolpolicy::host::time_in_rust(&engine.inner, &what, &query, iterations)
}
