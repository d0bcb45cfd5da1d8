//! What the language bindings (the Node and Python modules) share, so that
//! a host language sees the same engine the same way: failures as a message
//! and located diagnostics, files read as the engine reads its inputs, the
//! audit log opened or a warning why not, the words a binding reads from
//! its caller (`status`), the ids under which a binding keeps tool
//! definitions it has converted once, and the in-process timing loop its
//! benchmarks compare their own calls against.
//!
//! Nothing here knows a host language: each binding turns a [`Failure`]
//! into its own error type and keeps definitions in its own objects.

use std::any::Any;
use std::path::Path;

use serde::Serialize;

use crate::registry::LoadError;
use crate::runtime::{Delivery, Provider, ResultStatus};
use crate::{Context, ContextError, Engine, LoadErrors, Plan};

/// One diagnostic of a [`Failure`]. `code`, `file`, `line` and `column` are
/// `None` where the library has none (a registry entry is located by
/// `path`, a context by its fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diag {
    pub code: Option<String>,
    pub severity: &'static str,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl Diag {
    /// An error that is about an argument or the context, not a file.
    pub fn plain(message: impl Into<String>, help: Option<String>) -> Diag {
        Diag {
            code: None,
            severity: "error",
            message: message.into(),
            file: None,
            line: None,
            column: None,
            help,
            path: None,
        }
    }
}

/// An input the engine cannot use, as a binding raises it: the one-line
/// message its error carries, and every diagnostic, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub message: String,
    pub diagnostics: Vec<Diag>,
}

impl Failure {
    /// A usage error: a wrong argument type, an unknown provider or mode.
    /// The help, when there is one, follows the message in brackets.
    pub fn usage(message: impl Into<String>, help: Option<String>) -> Failure {
        let message = message.into();
        let text = match &help {
            Some(h) => format!("{message} ({h})"),
            None => message.clone(),
        };
        Failure {
            message: text,
            diagnostics: vec![Diag::plain(message, help)],
        }
    }

    /// A policy that does not load: every diagnostic, located; the message
    /// is the first, as `file:line:column: severity[code]: message`, with
    /// how many more errors there are.
    pub fn policy(e: &LoadErrors) -> Failure {
        let diagnostics: Vec<Diag> = crate::render::to_json_shown(&e.source, &e.diagnostics)
            .into_iter()
            .map(|d| Diag {
                code: Some(d.code),
                severity: d.severity,
                message: d.message,
                file: Some(d.file),
                line: Some(d.line),
                column: Some(d.column),
                help: d.help,
                path: None,
            })
            .collect();
        let errors = diagnostics.iter().filter(|d| d.severity == "error").count();
        let message = match diagnostics.first() {
            Some(d) => {
                let more = match errors {
                    0 | 1 => String::new(),
                    n => format!(" (and {} more)", n - 1),
                };
                format!(
                    "{}:{}:{}: {}[{}]: {}{more}",
                    d.file.as_deref().unwrap_or_default(),
                    d.line.unwrap_or(1),
                    d.column.unwrap_or(1),
                    d.severity,
                    d.code.as_deref().unwrap_or_default(),
                    d.message
                )
            }
            None => format!("`{}` does not load", e.source.name),
        };
        Failure {
            message,
            diagnostics,
        }
    }

    /// A registry or skill list (`file` says which) that does not load,
    /// located by its entry path.
    pub fn list(file: &str, e: &LoadError) -> Failure {
        let path = (!e.path.is_empty()).then(|| e.path.clone());
        Failure {
            message: format!("bad {file}: {e}"),
            diagnostics: vec![Diag {
                file: Some(file.to_string()),
                path,
                ..Diag::plain(e.message.clone(), None)
            }],
        }
    }

    /// A context the policy cannot answer for (an undeclared mode).
    pub fn context(e: &ContextError) -> Failure {
        Failure::usage(e.message.clone(), e.help.clone())
    }

    /// A panic caught at the binding's edge (`payload` as `catch_unwind`
    /// gives it): the engine is still usable, and says so.
    pub fn panic(payload: &(dyn Any + Send)) -> Failure {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Failure::usage(
            format!("the engine failed inside: {what}"),
            Some("this is a bug in toolpolicy; the engine is still usable".into()),
        )
    }
}

/// Reads a file through the library's reader, so that its size cap holds
/// in a binding too: `/dev/zero` or a runaway registry is refused, not read
/// until memory runs out.
pub fn read(path: &str) -> Result<Vec<u8>, Failure> {
    crate::input::read(Path::new(path)).map_err(|e| {
        Failure::usage(
            format!(
                "cannot read `{path}`: {}",
                crate::chars::lowercase_first(&e.to_string())
            ),
            None,
        )
    })
}

/// A text file read as the engine reads its inputs: capped, UTF-8, without
/// a leading byte-order mark.
pub fn read_text(path: &str) -> Result<String, Failure> {
    let mut text = String::from_utf8(read(path)?)
        .map_err(|_| Failure::usage(format!("`{path}` is not UTF-8"), None))?;
    let bom = text.len() - crate::input::strip_bom(&text).len();
    text.drain(..bom);
    Ok(text)
}

/// Opens the audit log at `path` (with search queries unless `queries` is
/// false), or says, as a warning a binding shows, why it cannot: a binding
/// works on without one, never fails for it.
#[cfg(feature = "audit-log")]
pub fn open_audit(
    path: &str,
    queries: bool,
) -> Result<std::sync::Arc<crate::audit::writer::AuditLog>, String> {
    let options = crate::audit::writer::Options {
        queries,
        ..Default::default()
    };
    crate::audit::writer::AuditLog::open(Path::new(path), options).map_err(|e| {
        format!(
            "cannot open the audit log `{}`: {}; going on without one",
            crate::chars::escape(path),
            crate::chars::lowercase_first(&e.to_string())
        )
    })
}

/// A result status as a caller writes it: `ok`, `error`, `interrupted` or
/// `missing`. Anything else is a usage failure about `what` (the argument's
/// name), with the nearest status when one is close.
pub fn status(text: &str, what: &str) -> Result<ResultStatus, Failure> {
    const ALL: [ResultStatus; 4] = [
        ResultStatus::Ok,
        ResultStatus::Error,
        ResultStatus::Interrupted,
        ResultStatus::Missing,
    ];
    if let Some(s) = ALL.into_iter().find(|s| s.as_str() == text) {
        return Ok(s);
    }
    let help = crate::diag::did_you_mean(text, ALL.map(ResultStatus::as_str))
        .unwrap_or_else(|| "the statuses are `ok`, `error`, `interrupted` and `missing`".into());
    Err(Failure::usage(
        format!("unknown status `{text}` in {what}"),
        Some(help),
    ))
}

/// The shapes a registry tool's definition comes in: one per provider, and
/// Anthropic's with `"defer_loading": true`.
const SHAPES: u32 = 5;
/// Anthropic's shape with `"defer_loading": true` (native deferral).
const ANTHROPIC_DEFERRED: u32 = 4;

/// The id under which a binding keeps registry tool `index`'s definition in
/// `provider`'s shape: distinct for every tool and shape.
pub fn def_id(index: usize, provider: Provider) -> u32 {
    let shape = match provider {
        Provider::Generic => 0,
        Provider::OpenAiChat => 1,
        Provider::OpenAiResponses => 2,
        Provider::Anthropic { .. } => 3,
    };
    id(index, shape)
}

/// The id of a deferred tool's definition marked for native deferral.
pub fn deferred_def_id(index: usize) -> u32 {
    id(index, ANTHROPIC_DEFERRED)
}

fn id(index: usize, shape: u32) -> u32 {
    u32::try_from(index)
        .unwrap_or(u32::MAX / SHAPES)
        .saturating_mul(SHAPES)
        .saturating_add(shape)
}

/// The definition ids of what [`Plan::provider_tools`] gives, in its order:
/// the declared tools in the provider's shape and, under Anthropic's native
/// deferral, the deferred ones marked (the first unmarked when nothing is
/// declared, as the library renders them).
pub fn provider_def_ids(plan: &Plan, provider: Provider) -> Vec<u32> {
    let mut ids: Vec<u32> = plan
        .declared_indices()
        .map(|i| def_id(i, provider))
        .collect();
    if provider
        == (Provider::Anthropic {
            native_deferral: true,
        })
    {
        for i in plan.deferred_indices() {
            ids.push(if ids.is_empty() {
                def_id(i, provider)
            } else {
                deferred_def_id(i)
            });
        }
    }
    ids
}

/// For a binding's benchmark: the calls its own benchmark makes through the
/// host language, made here in Rust `iterations` times in the same process,
/// so that the difference (what the host language adds) is measured under
/// the same load. Nanoseconds per call; NaN for an unknown `what`.
///
/// `what` is `plan`, `plan-switch` (each plan in the other of two
/// contexts), `tool-list-switch`, `openai-switch`, `plan-json`,
/// `plan-json-switch`, `plan-cached`, `session`, `search` (in a fresh
/// session) or `search-again` (in the same one), each with `query`.
pub fn time_in_rust(engine: &Engine, what: &str, query: &str, iterations: u32) -> f64 {
    use std::hint::black_box;
    let Ok(mut chat) = engine.session(Context::default()) else {
        return f64::NAN;
    };
    // Two contexts to switch between, as the benchmarks do before each
    // changed plan.
    let flags = |f: &str| Context {
        flags: [f.to_string()].into_iter().collect(),
        ..Context::default()
    };
    let contexts = [flags("a"), flags("b")];
    let start = std::time::Instant::now();
    for n in 0..iterations {
        if what.ends_with("-switch") {
            black_box(
                chat.set_context(engine, contexts[n as usize % 2].clone())
                    .ok(),
            );
        }
        let plan = match what {
            "session" | "search" | "search-again" => None,
            _ => chat.plan(engine).ok(),
        };
        match (what, plan) {
            ("plan" | "plan-switch", Some(plan)) => {
                black_box(plan.provider_tools(Provider::Generic));
                black_box(plan.deferred().count());
            }
            ("tool-list-switch", Some(plan)) => {
                black_box(plan.tool_list(Delivery::Declared));
                black_box(plan.provider_tools(Provider::Generic));
            }
            ("openai-switch", Some(plan)) => {
                black_box(plan.provider_tools(Provider::OpenAiChat));
            }
            ("plan-json" | "plan-json-switch", Some(plan)) => {
                let mut report = serde_json::to_value(plan.report()).unwrap_or_default();
                if let serde_json::Value::Object(map) = &mut report {
                    map.insert(
                        "declared".into(),
                        serde_json::Value::Array(plan.provider_tools(Provider::Generic)),
                    );
                }
                black_box(report.to_string());
            }
            ("plan-cached", Some(plan)) => {
                black_box(plan.declared_len());
            }
            ("session", _) => {
                black_box(engine.session(Context::default()).ok());
            }
            ("search", _) => {
                if let Ok(mut s) = engine.session(Context::default()) {
                    black_box(s.search(engine, query, &[] as &[&str]).ok());
                }
            }
            ("search-again", _) => {
                black_box(chat.search(engine, query, &[] as &[&str]).ok());
            }
            _ => return f64::NAN,
        }
    }
    start.elapsed().as_nanos() as f64 / f64::from(iterations.max(1))
}

/// One log a binding's caller hands to [`audit_report`]: a file by its
/// path, or log text with the name its bad lines are named by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogInput {
    Path(String),
    Text { name: String, text: String },
}

/// The report of `logs` ([`crate::audit::report`]), read one after the
/// other in the order given; with `engine`, its policy and registry (marked
/// for the policy's lock, as the engine holds them) try the suggested lines
/// and name the words misses lack, as `policy report --policy --registry`
/// does. A file that cannot be read is a failure; a line that is not an
/// event is counted and named in the report.
pub fn audit_report(
    logs: &[LogInput],
    engine: Option<&Engine>,
    options: crate::audit::report::Options,
) -> Result<crate::audit::report::Report, Failure> {
    use crate::audit::read::LogFile;
    let mut reader = crate::audit::report::Reader::new(options);
    for log in logs {
        match log {
            LogInput::Path(path) => {
                let cannot = |e: std::io::Error| {
                    Failure::usage(
                        format!(
                            "cannot read the audit log `{}`: {}",
                            crate::chars::escape(path),
                            crate::chars::lowercase_first(&e.to_string())
                        ),
                        None,
                    )
                };
                let mut file = LogFile::open(Path::new(path)).map_err(cannot)?;
                reader.read_log(&mut file).map_err(cannot)?;
            }
            LogInput::Text { name, text } => {
                let mut file = LogFile::new(name.as_str(), text.as_bytes());
                // Reading from memory fails on nothing.
                let _ = reader.read_log(&mut file);
            }
        }
    }
    Ok(match engine {
        Some(engine) => {
            let snap = engine.snapshot();
            reader.finish(Some(snap.policy()), Some(snap.registry()))
        }
        None => reader.finish(None, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Policy, Registry, SkillList, Tool};

    fn engine() -> Engine {
        let policy = Policy::parse("p.policy", "Defer(*)\nNoDefer(read)\n").unwrap();
        let tools = ["read", "write", "edit"]
            .map(|n| Tool {
                name: n.into(),
                description: format!("{n} a file"),
                ..Default::default()
            })
            .to_vec();
        Engine::new(policy, Registry::new(tools).unwrap(), SkillList::default())
    }

    #[test]
    fn a_policy_failure_leads_with_its_first_error_and_counts_the_rest() {
        let text = "mode a {\n}\nmode a {\n}\nmode b {\n}\nmode b {\n}\n";
        let f = Failure::policy(&Policy::parse("p.policy", text).unwrap_err());
        assert_eq!(f.diagnostics.len(), 2);
        let first = &f.diagnostics[0];
        assert_eq!(first.file.as_deref(), Some("p.policy"));
        assert_eq!((first.line, first.column), (Some(3), Some(1)));
        assert_eq!(first.code.as_deref(), Some("PL009"));
        assert_eq!(
            f.message,
            format!("p.policy:3:1: error[PL009]: {} (and 1 more)", first.message)
        );
    }

    #[test]
    fn a_usage_failure_puts_the_help_after_the_message() {
        let f = Failure::usage("unknown mode `plann`", Some("did you mean `plan`?".into()));
        assert_eq!(f.message, "unknown mode `plann` (did you mean `plan`?)");
        assert_eq!(
            f.diagnostics,
            vec![Diag::plain(
                "unknown mode `plann`",
                Some("did you mean `plan`?".into())
            )]
        );
    }

    #[test]
    fn a_list_failure_is_located_by_its_entry_path() {
        let e = Registry::from_json(r#"[{"name": 3}]"#).unwrap_err();
        let f = Failure::list("registry", &e);
        assert!(f.message.starts_with("bad registry: "), "{}", f.message);
        assert_eq!(f.diagnostics[0].file.as_deref(), Some("registry"));
        assert_eq!(
            f.diagnostics[0].path.as_deref(),
            Some(e.path.as_str()).filter(|p| !p.is_empty())
        );
    }

    #[test]
    fn a_caught_panic_says_what_failed_and_that_the_engine_still_works() {
        let payload = std::panic::catch_unwind(|| panic!("index out of range")).unwrap_err();
        let f = Failure::panic(payload.as_ref());
        assert!(
            f.message
                .contains("the engine failed inside: index out of range")
        );
        assert!(f.message.contains("still usable"));
    }

    #[test]
    fn files_are_read_capped_as_text_without_a_byte_order_mark() {
        let dir = std::env::temp_dir().join(format!("toolpolicy-host-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bom = dir.join("bom.json");
        std::fs::write(&bom, "\u{feff}[]").unwrap();
        assert_eq!(read_text(bom.to_str().unwrap()).unwrap(), "[]");
        let latin = dir.join("latin.json");
        std::fs::write(&latin, b"[\xe9]").unwrap();
        let f = read_text(latin.to_str().unwrap()).unwrap_err();
        assert!(f.message.ends_with("is not UTF-8"), "{}", f.message);
        let missing = dir.join("missing.json");
        let f = read_text(missing.to_str().unwrap()).unwrap_err();
        assert!(f.message.starts_with("cannot read `"), "{}", f.message);
        assert!(f.message.contains(": no such file"), "{}", f.message);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(feature = "audit-log")]
    #[test]
    fn an_audit_log_that_cannot_be_opened_is_a_warning_that_says_why() {
        let dir =
            std::env::temp_dir().join(format!("toolpolicy-host-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let inside_a_file = dir.join("file");
        std::fs::write(&inside_a_file, "").unwrap();
        let path = inside_a_file.join("audit.jsonl");
        let warning = open_audit(path.to_str().unwrap(), true).unwrap_err();
        assert!(
            warning.starts_with("cannot open the audit log `"),
            "{warning}"
        );
        assert!(warning.ends_with("; going on without one"), "{warning}");
        let log = open_audit(dir.join("audit.jsonl").to_str().unwrap(), false).unwrap();
        drop(log);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A FIFO that no process reads is a warning at once, not a wait for a
    /// reader (bounded here, so that a wait fails instead of hanging).
    #[cfg(all(feature = "audit-log", unix))]
    #[test]
    fn an_audit_log_at_a_fifo_nobody_reads_is_a_warning_at_once() {
        let dir = std::env::temp_dir().join(format!("toolpolicy-host-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("audit.fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()));
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.to_str().unwrap().to_string();
        std::thread::spawn(move || {
            let _ = tx.send(open_audit(&path, true).map(|_| ()));
        });
        let opened = rx.recv_timeout(std::time::Duration::from_secs(5));
        std::fs::remove_dir_all(&dir).unwrap();
        let warning = opened.expect("the open waited for a reader").unwrap_err();
        assert!(
            warning.starts_with("cannot open the audit log `")
                && warning.ends_with(
                    "audit.fifo`: it is a FIFO that no process reads (start its reader first); going on without one"
                ),
            "{warning}"
        );
    }

    #[test]
    fn statuses_read_as_written_and_a_near_miss_gets_the_nearest() {
        for s in ["ok", "error", "interrupted", "missing"] {
            assert_eq!(status(s, "status").unwrap().as_str(), s);
        }
        let f = status("interupted", "status").unwrap_err();
        assert!(
            f.message
                .starts_with("unknown status `interupted` in status")
        );
        assert!(f.message.contains("`interrupted`"), "{}", f.message);
        let f = status("zzz", "result.status").unwrap_err();
        assert!(f.message.contains("the statuses are"), "{}", f.message);
    }

    #[test]
    fn definition_ids_differ_for_every_tool_and_shape() {
        let providers = [
            Provider::Generic,
            Provider::OpenAiChat,
            Provider::OpenAiResponses,
            Provider::Anthropic {
                native_deferral: false,
            },
        ];
        let mut seen = std::collections::HashSet::new();
        for i in 0..50 {
            for p in providers {
                assert!(seen.insert(def_id(i, p)));
            }
            assert!(seen.insert(deferred_def_id(i)));
        }
    }

    #[test]
    fn provider_ids_follow_the_provider_tools_of_a_plan() {
        let engine = engine();
        let plan = engine
            .session(Context::default())
            .unwrap()
            .plan(&engine)
            .unwrap();
        let native = Provider::Anthropic {
            native_deferral: true,
        };
        let generic = provider_def_ids(&plan, Provider::Generic);
        assert_eq!(generic.len(), plan.provider_tools(Provider::Generic).len());
        let marked = provider_def_ids(&plan, native);
        assert_eq!(marked.len(), plan.provider_tools(native).len());
        assert_eq!(marked.len(), 3, "read declared, write and edit marked");
        assert_eq!(
            marked[1],
            deferred_def_id(plan.deferred_indices().next().unwrap())
        );
    }

    #[test]
    fn the_timing_loop_runs_what_it_knows_and_refuses_the_rest() {
        let engine = engine();
        for what in [
            "plan",
            "plan-switch",
            "tool-list-switch",
            "openai-switch",
            "plan-json",
            "plan-cached",
            "session",
            "search",
            "search-again",
        ] {
            let ns = time_in_rust(&engine, what, "edit", 3);
            assert!(ns.is_finite() && ns >= 0.0, "{what}: {ns}");
        }
        assert!(time_in_rust(&engine, "plann", "", 3).is_nan());
    }

    #[test]
    fn an_audit_report_reads_files_and_text_in_order_and_names_a_file_it_cannot_read() {
        let list = r#"{"version":1,"session":"s","event":"list","declared":2,"names":["read","write"],"tokens":10,"all_declared":30}"#;
        let call = r#"{"version":1,"session":"s","event":"call","tool":"read","outcome":"allowed","status":"ok"}"#;
        let dir =
            std::env::temp_dir().join(format!("toolpolicy-host-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.jsonl");
        std::fs::write(&file, format!("{list}\n")).unwrap();
        let logs = [
            LogInput::Path(file.display().to_string()),
            LogInput::Text {
                name: "more".into(),
                text: format!("{call}\nnot an event\n"),
            },
        ];
        let options = crate::audit::report::Options::default();
        let r = audit_report(&logs, None, options.clone()).unwrap();
        assert_eq!((r.events, r.sessions, r.tokens), (2, 1, 10));
        // `read` was called: only `write` is never called.
        let lines: Vec<&str> = r.never_called.iter().map(|s| s.line.as_str()).collect();
        assert_eq!(lines, ["Defer(write)"]);
        assert_eq!(r.never_called[0].checked, None);
        assert_eq!(
            (
                r.bad_lines_shown[0].file.as_str(),
                r.bad_lines_shown[0].line
            ),
            ("more", 2)
        );
        // With the engine's policy, which defers `write` already: nothing
        // to suggest.
        let r = audit_report(&logs, Some(&engine()), options.clone()).unwrap();
        assert!(r.never_called.is_empty(), "{:?}", r.never_called);
        let gone = LogInput::Path(dir.join("gone.jsonl").display().to_string());
        let f = audit_report(&[gone], None, options).unwrap_err();
        assert!(
            f.message.starts_with("cannot read the audit log `"),
            "{}",
            f.message
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
