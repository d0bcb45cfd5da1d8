//! `Engine`: the policy, the tool registry and the skill list, shared by
//! every chat of a host and by every thread. Hot reload swaps them whole; a
//! reload that fails raises and leaves the last good engine in place.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyTuple};
use toolpolicy::audit::writer::AuditLog;
use toolpolicy::explain::{explain, note_plan};
use toolpolicy::host::{Failure, read, read_text};
use toolpolicy::{ItemRef, LoadErrors, Policy, Registry, SessionState, SkillList};

use crate::args;
use crate::cache::Defs;
use crate::convert::to_py;
use crate::error::{self, Diag, guard};
use crate::session::Session;

/// The shared engine: build one per process (or per policy) and a
/// `Session` per chat.
#[pyclass(frozen, module = "toolpolicy")]
pub struct Engine {
    pub(crate) inner: Arc<toolpolicy::Engine>,
    /// The policy's file name, for the diagnostics of a reload.
    file: Mutex<String>,
    /// Where the policy stands, for the lock it names (`lock = "..."` is
    /// relative to its folder): the policy file, or for policy text a file
    /// in the `dir` argument's folder; `None` for text without one.
    place: Option<PathBuf>,
    /// The Python objects its sessions' plans share.
    defs: Arc<Defs>,
    /// The audit log its sessions write to, when one was asked for and
    /// could be opened.
    audit: Option<Arc<AuditLog>>,
}

/// Opens the audit log `audit` names, if any. A log that cannot be opened
/// is a warning (`warnings.warn`, `RuntimeWarning`), never an exception:
/// the engine works on without one.
fn open_audit(
    py: Python<'_>,
    audit: Option<&Bound<'_, PyAny>>,
    no_queries: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Arc<AuditLog>>> {
    let no_queries = args::opt_bool(no_queries, "audit_no_queries")?.unwrap_or(false);
    let Some(path) = audit
        .filter(|a| !a.is_none())
        .map(|a| args::path(a, "audit"))
        .transpose()?
    else {
        return Ok(None);
    };
    match toolpolicy::host::open_audit(&path, !no_queries) {
        Ok(log) => {
            // Before the interpreter exits, what is queued is written (a
            // few seconds at most); the hook does not keep the log open.
            let weak: Weak<AuditLog> = Arc::downgrade(&log);
            let flush = PyCFunction::new_closure(
                py,
                None,
                None,
                move |_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>| {
                    if let Some(log) = weak.upgrade() {
                        log.flush(Duration::from_secs(2));
                    }
                },
            )?;
            py.import("atexit")?.call_method1("register", (flush,))?;
            Ok(Some(log))
        }
        Err(warning) => {
            warn(py, &warning)?;
            Ok(None)
        }
    }
}

/// A Python warning (`RuntimeWarning`), shown where the caller is.
fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
    PyErr::warn(
        py,
        &category,
        &std::ffi::CString::new(message.replace('\0', ""))?,
        // The native call is no frame of its own: 1 is the caller's line.
        1,
    )
}

/// What goes wrong while building an engine, made into an exception once
/// the GIL is held again.
enum BuildError {
    Read(Failure),
    Policy(toolpolicy::LoadErrors),
    List(String, toolpolicy::registry::LoadError),
}

impl From<BuildError> for PyErr {
    fn from(e: BuildError) -> PyErr {
        match e {
            BuildError::Read(f) => error::raise(f),
            BuildError::Policy(e) => error::policy(&e),
            BuildError::List(file, e) => error::list(&file, &e),
        }
    }
}

fn registry(file: &str, text: &str) -> Result<Registry, BuildError> {
    Registry::from_json(text).map_err(|e| BuildError::List(file.into(), e))
}

fn skills(file: &str, text: &str) -> Result<SkillList, BuildError> {
    SkillList::from_json(text).map_err(|e| BuildError::List(file.into(), e))
}

/// Reads the lock `policy` names from beside `place` (the policy file, or a
/// file in the `dir` folder); policy text without a folder
/// that names a lock is an error at the `lock` setting.
fn attach_lock(policy: &mut Policy, place: Option<&Path>) -> std::result::Result<(), LoadErrors> {
    toolpolicy::lock::attach_at(
        policy,
        place,
        "pass the folder the lock path is relative to as `dir`, or build the engine with `Engine.from_files`",
    )
}

impl Engine {
    fn from_parts(
        engine: toolpolicy::Engine,
        file: String,
        place: Option<PathBuf>,
        audit: Option<Arc<AuditLog>>,
    ) -> Engine {
        if let Some(log) = &audit {
            engine.set_audit(Some(log.hook()));
        }
        Engine {
            inner: Arc::new(engine),
            file: Mutex::new(file),
            place,
            defs: Arc::default(),
            audit,
        }
    }
}

#[pymethods]
impl Engine {
    /// An engine from policy text and the tools: a list of definitions in
    /// any registry shape (generic, Anthropic, OpenAI, MCP), a dict with a
    /// `tools` list, or JSON text of either. `dir` is the folder the lock
    /// the policy names is read from, as if the text were a file there.
    #[new]
    #[pyo3(signature = (policy_text, tools, *, file = None, skills = None, dir = None, audit = None, audit_no_queries = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        policy_text: &Bound<'_, PyAny>,
        tools: &Bound<'_, PyAny>,
        file: Option<&Bound<'_, PyAny>>,
        skills: Option<&Bound<'_, PyAny>>,
        dir: Option<&Bound<'_, PyAny>>,
        audit: Option<&Bound<'_, PyAny>>,
        audit_no_queries: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Engine> {
        guard(|| {
            let text = args::string(policy_text, "policy_text")?;
            let tools = args::json_text(tools, "tools")?;
            let file = args::opt_string(file, "file")?.unwrap_or_else(|| "policy".to_string());
            let dir = match dir.filter(|d| !d.is_none()) {
                Some(d) => Some(args::path(d, "dir")?),
                None => None,
            };
            if dir.as_deref() == Some("") {
                return Err(error::wrong_value(
                    "`dir` names no folder",
                    Some(
                        "give the folder the policy's relative paths (its `lock`) are read from"
                            .into(),
                    ),
                ));
            }
            // The policy as if it were a file in that folder.
            let place = dir.map(|d| toolpolicy::lock::text_place(Path::new(&d), &file));
            let skill_text = match skills.filter(|s| !s.is_none()) {
                Some(v) => Some(args::json_text(v, "skills")?),
                None => None,
            };
            let engine = py.detach(|| -> Result<toolpolicy::Engine, BuildError> {
                let skill_list = match &skill_text {
                    Some(t) => self::skills("skills", t)?,
                    None => SkillList::default(),
                };
                let mut policy = Policy::parse(file.as_str(), text).map_err(BuildError::Policy)?;
                attach_lock(&mut policy, place.as_deref()).map_err(BuildError::Policy)?;
                let registry = registry("tools", &tools)?;
                Ok(toolpolicy::Engine::new(policy, registry, skill_list))
            })?;
            let audit = open_audit(py, audit, audit_no_queries)?;
            Ok(Engine::from_parts(engine, file, place, audit))
        })
    }

    /// An engine from a policy file, a registry file and maybe a skill list
    /// file, each read under the engine's 64 MiB cap; diagnostics name the
    /// files. The lock the policy names is read from beside it.
    #[staticmethod]
    #[pyo3(signature = (policy_path, registry_path, skills_path = None, *, audit = None, audit_no_queries = None))]
    fn from_files(
        py: Python<'_>,
        policy_path: &Bound<'_, PyAny>,
        registry_path: &Bound<'_, PyAny>,
        skills_path: Option<&Bound<'_, PyAny>>,
        audit: Option<&Bound<'_, PyAny>>,
        audit_no_queries: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Engine> {
        guard(|| {
            let policy_path = args::path(policy_path, "policy_path")?;
            let registry_path = args::path(registry_path, "registry_path")?;
            let skills_path = match skills_path.filter(|s| !s.is_none()) {
                Some(p) => Some(args::path(p, "skills_path")?),
                None => None,
            };
            let engine = py.detach(|| -> Result<toolpolicy::Engine, BuildError> {
                let bytes = read(&policy_path).map_err(BuildError::Read)?;
                let mut policy =
                    Policy::from_bytes(policy_path.as_str(), &bytes).map_err(BuildError::Policy)?;
                attach_lock(&mut policy, Some(Path::new(&policy_path)))
                    .map_err(BuildError::Policy)?;
                let text = read_text(&registry_path).map_err(BuildError::Read)?;
                let registry = registry(&registry_path, &text)?;
                let skill_list = match &skills_path {
                    Some(p) => {
                        let text = read_text(p).map_err(BuildError::Read)?;
                        skills(p, &text)?
                    }
                    None => SkillList::default(),
                };
                Ok(toolpolicy::Engine::new(policy, registry, skill_list))
            })?;
            let audit = open_audit(py, audit, audit_no_queries)?;
            let place = PathBuf::from(&policy_path);
            Ok(Engine::from_parts(engine, policy_path, Some(place), audit))
        })
    }

    /// Waits until the audit log's queued events are written (at most
    /// `within` seconds) and returns how many events were dropped so far
    /// because the log was not written in time; 0 without a log. Queued
    /// events are also written when the interpreter exits.
    #[pyo3(signature = (within = 5.0))]
    fn flush_audit(&self, py: Python<'_>, within: f64) -> PyResult<u64> {
        if !within.is_finite() || within < 0.0 {
            return Err(error::wrong_value(
                format!("within must be a number of seconds, not {within}"),
                None,
            ));
        }
        let Some(log) = &self.audit else {
            return Ok(0);
        };
        py.detach(|| log.flush(Duration::from_secs_f64(within.min(600.0))));
        if let Some(e) = log.take_error() {
            warn(py, &format!("the audit log could not be written: {e}"))?;
        }
        Ok(log.dropped())
    }

    /// The report of audit logs (`policy report`'s JSON, as a dict) with
    /// this engine's policy and registry: each suggested `NoDefer`/`Defer`
    /// line is tried on the policy, and a search miss names the words its
    /// tool lacks. `logs` are paths and `{"text": ...}` dicts of log text,
    /// read in the order given.
    #[pyo3(signature = (logs, *, caller = None, since = None))]
    fn audit_report<'py>(
        &self,
        py: Python<'py>,
        logs: &Bound<'py, PyAny>,
        caller: Option<&Bound<'py, PyAny>>,
        since: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        report(py, logs, caller, since, Some(&self.inner))
    }

    /// Whether an audit log is open (one was named and could be opened).
    #[getter]
    fn auditing(&self) -> bool {
        self.audit.is_some()
    }

    /// A new chat in a context; raises on a mode the policy does not declare
    /// (a policy with modes needs one).
    #[pyo3(signature = (context = None))]
    fn session(&self, context: Option<&Bound<'_, PyAny>>) -> PyResult<Session> {
        guard(|| {
            let ctx = args::context(context, "context")?;
            let inner = self.inner.session(ctx).map_err(|e| error::context(&e))?;
            Ok(Session::new(
                Arc::clone(&self.inner),
                Arc::clone(&self.defs),
                inner,
            ))
        })
    }

    /// A chat from its saved `state()` (a dict or JSON text): activations
    /// are rebuilt from its evidence, as after a restart.
    fn resume(&self, py: Python<'_>, state: &Bound<'_, PyAny>) -> PyResult<Session> {
        guard(|| {
            let text = args::json_text(state, "state")?;
            let state: SessionState = serde_json::from_str(&text).map_err(|e| {
                error::wrong_value(
                    format!("bad session state: {e}"),
                    Some("pass what `session.state()` returned".into()),
                )
            })?;
            let engine = &*self.inner;
            let inner = py
                .detach(|| engine.resume(state))
                .map_err(|e| error::context(&e))?;
            Ok(Session::new(
                Arc::clone(&self.inner),
                Arc::clone(&self.defs),
                inner,
            ))
        })
    }

    /// Why an item (a tool name, or `skill:NAME`) is active, deferred or
    /// hidden in a context: the `explain` JSON contract.
    #[pyo3(signature = (item, context = None))]
    fn explain<'py>(
        &self,
        py: Python<'py>,
        item: &Bound<'py, PyAny>,
        context: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let name = args::string(item, "item")?;
            let ctx = args::context(context, "context")?;
            if name.strip_prefix("skill:").unwrap_or(&name).is_empty() {
                return Err(error::wrong_value(
                    format!("`{name}` names nothing"),
                    Some("give a tool name or `skill:NAME`".into()),
                ));
            }
            let engine = &*self.inner;
            let value = py
                .detach(|| -> Result<serde_json::Value, toolpolicy::ContextError> {
                    let snap = engine.snapshot();
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
                    let mut e = explain(snap.policy(), snap.table(), &ctx, &item)?;
                    note_plan(&mut e, snap.table(), snap.registry())?;
                    Ok(serde_json::to_value(&e).unwrap_or_default())
                })
                .map_err(|e| error::context(&e))?;
            to_py(py, &value)
        })
    }

    /// Replaces the policy; raises with its diagnostics and keeps the last
    /// good one when it does not load. Sessions use it from their next call.
    /// The lock it names is read again, from the same folder as at
    /// construction: call it after the lock file changed, too.
    #[pyo3(signature = (text, file = None))]
    fn reload_policy(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        file: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        guard(|| {
            let text = args::string(text, "text")?;
            let file = match args::opt_string(file, "file")? {
                Some(f) => f,
                None => self
                    .file
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone(),
            };
            let engine = &*self.inner;
            let place = self.place.as_deref();
            py.detach(|| {
                let loaded = Policy::parse(file.as_str(), text)
                    .and_then(|mut policy| attach_lock(&mut policy, place).map(|()| policy));
                let codes = match &loaded {
                    Ok(_) => Vec::new(),
                    Err(e) => e.diagnostics.iter().map(|d| d.code.to_string()).collect(),
                };
                engine.emit(toolpolicy::audit::EventKind::Reload {
                    what: "policy".into(),
                    ok: loaded.is_ok(),
                    codes,
                });
                loaded.map(|policy| engine.set_policy(policy))
            })
            .map_err(|e| error::policy(&e))?;
            *self.file.lock().unwrap_or_else(PoisonError::into_inner) = file;
            Ok(())
        })
    }

    /// Replaces the registry (a list of definitions or JSON text); raises
    /// and keeps the last good one when it does not load. Sessions keep
    /// their activations by name.
    fn reload_registry(&self, py: Python<'_>, tools: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            let text = args::json_text(tools, "tools")?;
            let engine = &*self.inner;
            py.detach(|| engine.reload_registry(&text))
                .map_err(|e| error::list("tools", &e))
        })
    }

    /// Replaces the skill list; raises and keeps the last good one.
    fn reload_skills(&self, py: Python<'_>, skills: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            let text = args::json_text(skills, "skills")?;
            let engine = &*self.inner;
            py.detach(|| engine.reload_skills(&text))
                .map_err(|e| error::list("skills", &e))
        })
    }

    /// What loaded but reads badly: registry and skill names that differ
    /// only by case or Unicode form (`PL115`), one diagnostic each.
    fn warnings<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        guard(|| {
            let snap = self.inner.snapshot();
            let all = snap
                .registry()
                .warnings()
                .iter()
                .map(|w| ("tools", w))
                .chain(snap.skills().warnings().iter().map(|w| ("skills", w)));
            all.map(|(file, w)| {
                let d = Diag {
                    code: Some(w.code.as_str().to_string()),
                    severity: "warning",
                    file: Some(file.to_string()),
                    path: Some(w.path.clone()),
                    ..Diag::plain(w.message.clone(), w.help.clone())
                };
                error::to_dict(&d, py)
            })
            .collect()
        })
    }

    /// The modes the policy declares, in file order.
    #[getter]
    fn modes(&self) -> Vec<String> {
        self.inner.snapshot().policy().modes.clone()
    }

    /// The tool names of the registry, in registry order.
    #[getter]
    fn tool_names(&self) -> Vec<String> {
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
#[pyfunction]
pub fn lock_text(py: Python<'_>, tools: &Bound<'_, PyAny>) -> PyResult<String> {
    guard(|| {
        let text = args::json_text(tools, "tools")?;
        py.detach(|| -> Result<String, BuildError> {
            let registry = registry("tools", &text)?;
            Ok(toolpolicy::lock::Lock::from_registry(&registry).to_text())
        })
        .map_err(PyErr::from)
    })
}

/// The report of audit logs without a policy or registry (`policy
/// report`'s JSON, as a dict). `logs` are paths and `{"text": ...}` dicts
/// of log text, read in the order given; `Engine.audit_report` also tries
/// each suggested line on the engine's policy.
#[pyfunction]
#[pyo3(signature = (logs, *, caller = None, since = None))]
pub fn audit_report<'py>(
    py: Python<'py>,
    logs: &Bound<'py, PyAny>,
    caller: Option<&Bound<'py, PyAny>>,
    since: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    report(py, logs, caller, since, None)
}

fn report<'py>(
    py: Python<'py>,
    logs: &Bound<'py, PyAny>,
    caller: Option<&Bound<'py, PyAny>>,
    since: Option<&Bound<'py, PyAny>>,
    engine: Option<&toolpolicy::Engine>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let logs = args::logs(logs, "logs")?;
        let options = toolpolicy::audit::report::Options {
            caller: args::opt_string(caller, "caller")?,
            since: args::opt_string(since, "since")?,
        };
        let value = py
            .detach(|| {
                toolpolicy::host::audit_report(&logs, engine, options)
                    .map(|r| serde_json::to_value(&r).unwrap_or_default())
            })
            .map_err(error::raise)?;
        to_py(py, &value)
    })
}

/// A text file read the way the engine reads its own inputs: under the
/// library's 64 MiB cap, as UTF-8, without a leading byte-order mark. For a
/// host's own files (a settings file, a policy it passes as text), so that
/// `/dev/zero` or an endless pipe is refused there too.
#[pyfunction]
pub fn read_input(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<String> {
    guard(|| {
        let path = args::path(path, "path")?;
        py.detach(|| read_text(&path)).map_err(error::raise)
    })
}

/// For `bench.py`: the same calls as its Python ones, timed in Rust in the
/// same process, so that the difference (what Python adds) is measured
/// under the same load. Nanoseconds per call.
#[pyfunction]
#[pyo3(name = "_time_in_rust")]
pub fn time_in_rust(
    py: Python<'_>,
    engine: &Engine,
    what: String,
    query: String,
    iterations: u32,
) -> f64 {
    let e = &*engine.inner;
    py.detach(|| toolpolicy::host::time_in_rust(e, &what, &query, iterations))
}
