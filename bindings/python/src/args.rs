//! Reading Python arguments. Types are checked here rather than by PyO3's
//! conversions, so that a wrong argument reads in Python's terms
//! (`context["flags"] must be a list of strings, not int`) instead of
//! naming a Rust type. A wrong type raises `TypeError` and a wrong value
//! `ValueError`, as Python's own functions do.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};
use toolpolicy::Context;
use toolpolicy::host::LogInput;
use toolpolicy::runtime::{DEFAULT_CALL_TOOL, ResultStatus};

use crate::error::{wrong_type, wrong_value};

/// How a value is called in messages: its type's name.
fn kind(v: &Bound<'_, PyAny>) -> String {
    if v.is_none() {
        return "None".into();
    }
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "a value of another kind".into())
}

fn wrong(what: &str, expected: &str, v: &Bound<'_, PyAny>) -> PyErr {
    wrong_type(format!("{what} must be {expected}, not {}", kind(v)))
}

pub fn string(v: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match v.cast::<PyString>() {
        Ok(s) => Ok(s
            .to_cow()
            .map_err(|_| {
                wrong_value(
                    format!("{what} is not valid text"),
                    Some("it holds a lone surrogate".into()),
                )
            })?
            .to_string()),
        Err(_) => Err(wrong(what, "a string", v)),
    }
}

/// A path: a string or an `os.PathLike` (`pathlib.Path`).
pub fn path(v: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if v.hasattr("__fspath__")? {
        let p = v.call_method0("__fspath__")?;
        return string(&p, what);
    }
    if !v.is_instance_of::<PyString>() {
        return Err(wrong(what, "a string or a path", v));
    }
    string(v, what)
}

pub fn opt_string(v: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<String>> {
    match v {
        Some(v) if !v.is_none() => string(v, what).map(Some),
        _ => Ok(None),
    }
}

pub fn opt_bool(v: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<bool>> {
    match v {
        Some(v) if !v.is_none() => match v.cast::<PyBool>() {
            Ok(b) => Ok(Some(b.is_true())),
            Err(_) => Err(wrong(what, "a bool", v)),
        },
        _ => Ok(None),
    }
}

/// A list or tuple of strings. Nothing is reserved up front; each item is
/// checked as it is read, and the first that is not a string stops it.
pub fn strings(v: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    if !(v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>()) {
        return Err(wrong(what, "a list of strings", v));
    }
    let mut out = Vec::new();
    for (i, item) in v.try_iter()?.enumerate() {
        let item = item?;
        if !item.is_instance_of::<PyString>() {
            return Err(wrong(&format!("{what}[{i}]"), "a string", &item));
        }
        out.push(string(&item, &format!("{what}[{i}]"))?);
    }
    Ok(out)
}

pub fn opt_strings(v: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<String>>> {
    match v {
        Some(v) if !v.is_none() => strings(v, what).map(Some),
        _ => Ok(None),
    }
}

/// A dict with only the `allowed` (string) keys; `None` when left out.
pub fn options<'py>(
    v: Option<&Bound<'py, PyAny>>,
    what: &str,
    allowed: &[&str],
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(v) = v.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    let Ok(dict) = v.cast::<PyDict>() else {
        return Err(wrong(what, "a dict", v));
    };
    for key in dict.keys() {
        let key = match key.cast::<PyString>() {
            Ok(k) => k.to_string(),
            Err(_) => return Err(wrong(&format!("a key of {what}"), "a string", &key)),
        };
        if !allowed.contains(&key.as_str()) {
            let help = toolpolicy::diag::did_you_mean(&key, allowed.iter().copied())
                .unwrap_or_else(|| {
                    let names: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
                    format!("the keys are {}", names.join(", "))
                });
            return Err(wrong_value(
                format!("unknown key `{key}` in {what}"),
                Some(help),
            ));
        }
    }
    Ok(Some(dict.clone()))
}

/// A field of an options dict, `None` when absent or `None`.
pub fn field<'py>(
    dict: Option<&Bound<'py, PyDict>>,
    key: &str,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(dict) = dict else { return Ok(None) };
    Ok(dict.get_item(key)?.filter(|v| !v.is_none()))
}

/// JSON text from a string (taken as it is) or from a list or dict
/// (serialized by Python's own `json.dumps`, the cheapest faithful way
/// across the boundary).
pub fn json_text(v: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if v.is_instance_of::<PyString>() {
        return string(v, what);
    }
    if !(v.is_instance_of::<PyList>()
        || v.is_instance_of::<PyDict>()
        || v.is_instance_of::<PyTuple>())
    {
        return Err(wrong(what, "a list, a dict or JSON text", v));
    }
    let py = v.py();
    let dumps = py.import("json")?.getattr("dumps")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("allow_nan", false)?;
    kwargs.set_item("ensure_ascii", false)?;
    match dumps.call((v,), Some(&kwargs)) {
        Ok(text) => string(&text, what),
        Err(e) => {
            // What `json.dumps` raises says which: an object JSON has no
            // type for (`TypeError`), `nan` or a cycle (`ValueError`); what
            // else stops it (nesting past Python's recursion limit) is
            // the engine's refusal.
            let message = format!("{what} cannot be written as JSON: {}", e.value(py));
            let help = "give lists, dicts, strings, numbers, booleans and None only";
            Err(if e.is_instance_of::<PyTypeError>(py) {
                wrong_type(format!("{message} ({help})"))
            } else if e.is_instance_of::<PyValueError>(py) {
                wrong_value(message, Some(help.into()))
            } else {
                crate::error::raise(toolpolicy::host::Failure::usage(message, Some(help.into())))
            })
        }
    }
}

/// A context: `{"mode", "bot", "flags", "grants"}`, each optional.
pub fn context(v: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Context> {
    let dict = options(v, what, &["mode", "bot", "flags", "grants"])?;
    let dict = dict.as_ref();
    let f = |key: &str| field(dict, key);
    let sub = |key: &str| format!("{what}[\"{key}\"]");
    Ok(Context {
        mode: opt_string(f("mode")?.as_ref(), &sub("mode"))?,
        bot: opt_string(f("bot")?.as_ref(), &sub("bot"))?,
        flags: opt_strings(f("flags")?.as_ref(), &sub("flags"))?
            .unwrap_or_default()
            .into_iter()
            .collect(),
        grants: opt_strings(f("grants")?.as_ref(), &sub("grants"))?,
    })
}

/// A result status: `"ok"` (the default), `"error"`, `"interrupted"` or `"missing"`.
pub fn status(v: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<ResultStatus> {
    let Some(text) = opt_string(v, what)? else {
        return Ok(ResultStatus::Ok);
    };
    toolpolicy::host::status(&text, what).map_err(crate::error::value)
}

/// The call-through tool's name from `call_through=True | "name"`; `None`
/// for declared delivery.
pub fn call_through(v: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<String>> {
    let Some(v) = v.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(b.is_true().then(|| DEFAULT_CALL_TOOL.to_string()));
    }
    if v.is_instance_of::<PyString>() {
        return string(v, what).map(Some);
    }
    Err(wrong(what, "a bool or a tool name", v))
}

/// Audit logs: a list of paths (strings or `os.PathLike`) and
/// `{"text": ..., "name": ...}` dicts of log text (`name`, `log N` by
/// default, names its bad lines).
pub fn logs(v: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<LogInput>> {
    if !(v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>()) {
        return Err(wrong(what, "a list of paths and {\"text\": ...} dicts", v));
    }
    let mut out = Vec::new();
    for (i, item) in v.try_iter()?.enumerate() {
        let item = item?;
        let at = format!("{what}[{i}]");
        if !item.is_instance_of::<PyDict>() {
            if !(item.is_instance_of::<PyString>() || item.hasattr("__fspath__")?) {
                return Err(wrong(&at, "a path or a {\"text\": ...} dict", &item));
            }
            out.push(LogInput::Path(path(&item, &at)?));
            continue;
        }
        let dict = options(Some(&item), &at, &["text", "name"])?;
        let Some(text) = field(dict.as_ref(), "text")? else {
            return Err(wrong_value(
                format!("{at} has no \"text\""),
                Some("give a log file's path, or {\"text\": ...} with the log's text".into()),
            ));
        };
        let text = string(&text, &format!("{at}[\"text\"]"))?;
        let name = opt_string(
            field(dict.as_ref(), "name")?.as_ref(),
            &format!("{at}[\"name\"]"),
        )?
        .unwrap_or_else(|| format!("log {}", i + 1));
        out.push(LogInput::Text { name, text });
    }
    Ok(out)
}
