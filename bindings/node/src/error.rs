//! Errors as JavaScript sees them: an `Error` named `ToolPolicyError` with a
//! `diagnostics` array of `{code, severity, message, file, line, column}`
//! (plus `help` and, for registry entries, `path`), so a host can show a
//! policy's errors in place and a script can match on codes.

use napi::bindgen_prelude::{JsObjectValue, JsValue, Object};
use napi::{Env, Error, Result};
use serde::Serialize;
use toolpolicy::LoadErrors;
use toolpolicy::registry::LoadError;

/// One diagnostic. `code`, `line` and `column` are `null` where the library
/// has none (a registry entry is located by `path`, a context by its fields).
#[derive(Debug, Clone, Serialize)]
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

/// A thrown `ToolPolicyError`. Building the object can only fail when the
/// JavaScript engine is out of memory; the message survives even then.
pub fn throw(env: &Env, message: String, diagnostics: Vec<Diag>) -> Error {
    match build(env, &message, &diagnostics) {
        Ok(e) => e,
        Err(_) => Error::from_reason(message),
    }
}

fn build(env: &Env, message: &str, diagnostics: &[Diag]) -> Result<Error> {
    let mut obj: Object = env.create_error(Error::from_reason(message))?;
    obj.set_named_property("name", "ToolPolicyError")?;
    obj.set_named_property("diagnostics", env.to_js_value(&diagnostics)?)?;
    Ok(Error::from(obj.to_unknown()))
}

/// A usage error: a wrong argument type, an unknown provider or mode.
pub fn usage(env: &Env, message: impl Into<String>, help: Option<String>) -> Error {
    let message = message.into();
    let text = match &help {
        Some(h) => format!("{message} ({h})"),
        None => message.clone(),
    };
    throw(env, text, vec![Diag::plain(message, help)])
}

/// A policy that does not load: every diagnostic, located, the first in the
/// message.
pub fn policy(env: &Env, e: &LoadErrors) -> Error {
    let diags: Vec<Diag> = toolpolicy::render::to_json_shown(&e.source, &e.diagnostics)
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
    let errors = diags.iter().filter(|d| d.severity == "error").count();
    let message = match diags.first() {
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
    throw(env, message, diags)
}

/// A registry or skill list that does not load, located by its entry path.
pub fn list(env: &Env, file: &str, e: &LoadError) -> Error {
    let path = (!e.path.is_empty()).then(|| e.path.clone());
    let diag = Diag {
        file: Some(file.to_string()),
        path,
        ..Diag::plain(e.message.clone(), None)
    };
    throw(env, format!("bad {file}: {e}"), vec![diag])
}

/// A context the policy cannot answer for (an undeclared mode).
pub fn context(env: &Env, e: &toolpolicy::ContextError) -> Error {
    usage(env, e.message.clone(), e.help.clone())
}
