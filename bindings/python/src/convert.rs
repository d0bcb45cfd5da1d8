//! JSON values as Python objects: objects as dicts (in their order), arrays
//! as lists, numbers as `int` where they are integers (of any size, as the
//! registry keeps them verbatim) and `float` otherwise.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => number(py, n)?,
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

fn number<'py>(py: Python<'py>, n: &serde_json::Number) -> PyResult<Bound<'py, PyAny>> {
    if let Some(i) = n.as_i64() {
        return Ok(i.into_pyobject(py)?.into_any());
    }
    if let Some(u) = n.as_u64() {
        return Ok(u.into_pyobject(py)?.into_any());
    }
    // A number past 64 bits or with a fraction or exponent, kept as its
    // text: Python's `int` takes an integer of any size, `float` the rest.
    let text = n.to_string();
    let builtins = py.import("builtins")?;
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        builtins.getattr("int")?.call1((text,))
    } else {
        builtins.getattr("float")?.call1((text,))
    }
}
