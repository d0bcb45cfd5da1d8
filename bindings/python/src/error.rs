//! Errors as Python sees them: a `ToolPolicyError` whose `diagnostics` is a
//! list of `{code, severity, message, file, line, column}` dicts (plus
//! `help` and, for registry entries, `path`), so that a host can show a
//! policy's errors in place and a script can match on codes.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use toolpolicy::LoadErrors;
use toolpolicy::registry::LoadError;

pyo3::create_exception!(
    toolpolicy,
    ToolPolicyError,
    PyException,
    "An input the engine cannot use; `diagnostics` says where and what."
);

/// One diagnostic. `code`, `file`, `line` and `column` are `None` where the
/// library has none (a registry entry is located by `path`, a context by its
/// fields).
#[derive(Debug, Clone)]
pub struct Diag {
    pub code: Option<String>,
    pub severity: &'static str,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub help: Option<String>,
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

    pub fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("code", &self.code)?;
        d.set_item("severity", self.severity)?;
        d.set_item("message", &self.message)?;
        d.set_item("file", &self.file)?;
        d.set_item("line", self.line)?;
        d.set_item("column", self.column)?;
        if let Some(help) = &self.help {
            d.set_item("help", help)?;
        }
        if let Some(path) = &self.path {
            d.set_item("path", path)?;
        }
        Ok(d)
    }
}

/// A `ToolPolicyError` carrying `diagnostics`. Building the list can only
/// fail when Python is out of memory; the message survives even then.
pub fn throw(message: String, diagnostics: Vec<Diag>) -> PyErr {
    let err = ToolPolicyError::new_err(message);
    Python::attach(|py| {
        let list: PyResult<Vec<Bound<'_, PyDict>>> =
            diagnostics.iter().map(|d| d.to_dict(py)).collect();
        if let Ok(list) = list {
            let _ = err.value(py).setattr("diagnostics", list);
        }
    });
    err
}

/// A usage error: a wrong argument type, an unknown provider or mode.
pub fn usage(message: impl Into<String>, help: Option<String>) -> PyErr {
    let message = message.into();
    let text = match &help {
        Some(h) => format!("{message} ({h})"),
        None => message.clone(),
    };
    throw(text, vec![Diag::plain(message, help)])
}

/// A policy that does not load: every diagnostic, located, the first in the
/// message.
pub fn policy(e: &LoadErrors) -> PyErr {
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
    throw(message, diags)
}

/// A registry or skill list that does not load, located by its entry path.
pub fn list(file: &str, e: &LoadError) -> PyErr {
    let path = (!e.path.is_empty()).then(|| e.path.clone());
    let diag = Diag {
        file: Some(file.to_string()),
        path,
        ..Diag::plain(e.message.clone(), None)
    };
    throw(format!("bad {file}: {e}"), vec![diag])
}

/// A context the policy cannot answer for (an undeclared mode).
pub fn context(e: &toolpolicy::ContextError) -> PyErr {
    usage(e.message.clone(), e.help.clone())
}

/// Runs `f`, turning a panic into a `ToolPolicyError`: nothing that goes
/// wrong inside the engine may take the interpreter down or escape as an
/// exception `except Exception` does not catch.
pub fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Err(usage(
                format!("the engine failed inside: {what}"),
                Some("this is a bug in toolpolicy; the engine is still usable".into()),
            ))
        }
    }
}
