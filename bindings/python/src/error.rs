//! Errors as Python sees them. What the engine refuses is a
//! `ToolPolicyError` whose `diagnostics` is a list of `{code, severity,
//! message, file, line, column}` dicts (plus `help` and, for registry
//! entries, `path`), so that a host can show a policy's errors in place and
//! a script can match on codes. A mistake in the call itself is what
//! Python's own functions raise: `TypeError` for an argument of the wrong
//! type, `ValueError` for a value no call accepts; so `except
//! ToolPolicyError` around a reload never swallows a bug of the caller.

use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
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

pub use toolpolicy::host::Diag;
use toolpolicy::host::Failure;

/// A diagnostic as a dict: `code`, `severity`, `message`, `file`, `line`,
/// `column`, and `help` and `path` where there are.
pub fn to_dict<'py>(d: &Diag, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("code", &d.code)?;
    out.set_item("severity", d.severity)?;
    out.set_item("message", &d.message)?;
    out.set_item("file", &d.file)?;
    out.set_item("line", d.line)?;
    out.set_item("column", d.column)?;
    if let Some(help) = &d.help {
        out.set_item("help", help)?;
    }
    if let Some(path) = &d.path {
        out.set_item("path", path)?;
    }
    Ok(out)
}

/// A `ToolPolicyError` carrying `diagnostics`. Building the list can only
/// fail when Python is out of memory; the message survives even then.
pub fn throw(message: String, diagnostics: Vec<Diag>) -> PyErr {
    let err = ToolPolicyError::new_err(message);
    Python::attach(|py| {
        let list: PyResult<Vec<Bound<'_, PyDict>>> =
            diagnostics.iter().map(|d| to_dict(d, py)).collect();
        if let Ok(list) = list {
            let _ = err.value(py).setattr("diagnostics", list);
        }
    });
    err
}

/// A failure the library shaped, raised.
pub fn raise(f: Failure) -> PyErr {
    throw(f.message, f.diagnostics)
}

/// Something that should never happen, and that the caller did not cause
/// (a view missing from its cache): a `ToolPolicyError`, as a panic is.
pub fn internal(message: impl Into<String>) -> PyErr {
    raise(Failure::usage(message, None))
}

/// An argument of the wrong type: `TypeError`.
pub fn wrong_type(message: impl Into<String>) -> PyErr {
    PyTypeError::new_err(message.into())
}

/// An argument whose value no call accepts (an unknown provider, a key a
/// dict may not have): `ValueError`, with the help in brackets.
pub fn wrong_value(message: impl Into<String>, help: Option<String>) -> PyErr {
    PyValueError::new_err(Failure::usage(message, help).message)
}

/// A wrong value the library shaped (an unknown status): `ValueError`.
pub fn value(f: Failure) -> PyErr {
    PyValueError::new_err(f.message)
}

/// A policy that does not load: every diagnostic, located, the first in the
/// message.
pub fn policy(e: &LoadErrors) -> PyErr {
    raise(Failure::policy(e))
}

/// A registry or skill list that does not load, located by its entry path.
pub fn list(file: &str, e: &LoadError) -> PyErr {
    raise(Failure::list(file, e))
}

/// A context the policy cannot answer for (an undeclared mode).
pub fn context(e: &toolpolicy::ContextError) -> PyErr {
    raise(Failure::context(e))
}

/// Runs `f`, turning a panic into a `ToolPolicyError`: nothing that goes
/// wrong inside the engine may take the interpreter down or escape as an
/// exception `except Exception` does not catch.
pub fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(raise(Failure::panic(payload.as_ref()))),
    }
}
