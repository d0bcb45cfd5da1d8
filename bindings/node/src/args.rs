//! Reading JavaScript arguments. Types are checked here rather than by
//! napi's conversions, so that a wrong argument reads in JavaScript's terms
//! (`options.flags must be an array of strings, not a number`) instead of
//! naming a Rust type.

use napi::JSON;
use napi::bindgen_prelude::{JsObjectValue, JsValue, Object, Unknown};
use napi::{Env, Result, ValueType};
use toolpolicy::Context;
use toolpolicy::audit::report::Options as ReportOptions;
use toolpolicy::host::LogInput;
use toolpolicy::runtime::{DEFAULT_CALL_TOOL, ResultStatus};

use crate::error::usage;

/// How a value is called in messages.
fn kind(v: &Unknown) -> &'static str {
    match v.get_type() {
        Ok(ValueType::String) => "a string",
        Ok(ValueType::Number) => "a number",
        Ok(ValueType::Boolean) => "a boolean",
        Ok(ValueType::Null) => "null",
        Ok(ValueType::Undefined) => "undefined",
        Ok(ValueType::Function) => "a function",
        Ok(ValueType::Object) if v.is_array().unwrap_or(false) => "an array",
        Ok(ValueType::Object) => "an object",
        Ok(ValueType::BigInt) => "a bigint",
        Ok(ValueType::Symbol) => "a symbol",
        _ => "a value of another kind",
    }
}

fn wrong(env: &Env, what: &str, expected: &str, v: &Unknown) -> napi::Error {
    usage(
        env,
        format!("{what} must be {expected}, not {}", kind(v)),
        None,
    )
}

/// Whether an optional argument or field was left out.
pub fn absent(v: &Unknown) -> bool {
    matches!(v.get_type(), Ok(ValueType::Undefined) | Ok(ValueType::Null))
}

pub fn string(env: &Env, v: &Unknown, what: &str) -> Result<String> {
    if v.get_type()? != ValueType::String {
        return Err(wrong(env, what, "a string", v));
    }
    // SAFETY: the type was checked just above.
    unsafe { v.cast::<String>() }
}

pub fn opt_string(env: &Env, v: Option<&Unknown>, what: &str) -> Result<Option<String>> {
    match v {
        Some(v) if !absent(v) => string(env, v, what).map(Some),
        _ => Ok(None),
    }
}

pub fn opt_bool(env: &Env, v: Option<&Unknown>, what: &str) -> Result<Option<bool>> {
    match v {
        Some(v) if !absent(v) => {
            if v.get_type()? != ValueType::Boolean {
                return Err(wrong(env, what, "a boolean", v));
            }
            // SAFETY: the type was checked just above.
            unsafe { v.cast::<bool>() }.map(Some)
        }
        _ => Ok(None),
    }
}

/// A finite number.
pub fn number(env: &Env, v: &Unknown, what: &str) -> Result<f64> {
    if v.get_type()? != ValueType::Number {
        return Err(wrong(env, what, "a number", v));
    }
    // SAFETY: the type was checked just above.
    let n = unsafe { v.cast::<f64>() }?;
    if !n.is_finite() {
        return Err(usage(
            env,
            format!("{what} must be a finite number, not {n}"),
            None,
        ));
    }
    Ok(n)
}

pub fn strings(env: &Env, v: &Unknown, what: &str) -> Result<Vec<String>> {
    if !v.is_array()? {
        return Err(wrong(env, what, "an array of strings", v));
    }
    // SAFETY: an array is an object.
    let array: Object = unsafe { v.cast() }?;
    // Nothing is reserved from `length`: a sparse array claims up to
    // 2^32 - 1 elements it does not hold, and reserving for them would
    // abort the host. Its first hole fails the type check below.
    let mut out = Vec::new();
    for i in 0..array.get_array_length()? {
        let item: Unknown = array.get_element(i)?;
        if item.get_type()? != ValueType::String {
            return Err(wrong(env, &format!("{what}[{i}]"), "a string", &item));
        }
        // SAFETY: the type was checked just above.
        out.push(unsafe { item.cast::<String>() }?);
    }
    Ok(out)
}

pub fn opt_strings(env: &Env, v: Option<&Unknown>, what: &str) -> Result<Option<Vec<String>>> {
    match v {
        Some(v) if !absent(v) => strings(env, v, what).map(Some),
        _ => Ok(None),
    }
}

/// An options object with only the `allowed` keys; `None` when left out.
pub fn options<'a>(
    env: &Env,
    v: Option<&Unknown<'a>>,
    what: &str,
    allowed: &[&str],
) -> Result<Option<Object<'a>>> {
    let Some(v) = v.filter(|v| !absent(v)) else {
        return Ok(None);
    };
    if v.get_type()? != ValueType::Object || v.is_array()? {
        return Err(wrong(env, what, "an object", v));
    }
    // SAFETY: the type was checked just above.
    let obj: Object = unsafe { v.cast() }?;
    let keys = obj.get_property_names()?;
    for i in 0..keys.get_array_length()? {
        let key: Unknown = keys.get_element(i)?;
        let Ok(key) = string(env, &key, "a key") else {
            continue;
        };
        if !allowed.contains(&key.as_str()) {
            let help = toolpolicy::diag::did_you_mean(&key, allowed.iter().copied())
                .unwrap_or_else(|| {
                    let names: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
                    format!("the keys are {}", names.join(", "))
                });
            return Err(usage(
                env,
                format!("unknown key `{key}` in {what}"),
                Some(help),
            ));
        }
    }
    Ok(Some(obj))
}

/// A field of an options object, `None` when absent.
pub fn field<'a>(obj: Option<&Object<'a>>, key: &str) -> Result<Option<Unknown<'a>>> {
    let Some(obj) = obj else { return Ok(None) };
    let v: Unknown = obj.get_named_property(key)?;
    Ok((!absent(&v)).then_some(v))
}

/// JSON text from a string (taken as it is) or from an array or object
/// (serialized by JavaScript's own `JSON.stringify`, the cheapest faithful
/// way across the boundary).
pub fn json_text(env: &Env, v: &Unknown, what: &str) -> Result<String> {
    match v.get_type()? {
        ValueType::String => string(env, v, what),
        ValueType::Object => {
            let json: JSON = env.get_global()?.get_named_property_unchecked("JSON")?;
            json.stringify(*v)
        }
        _ => Err(wrong(env, what, "an array, an object or JSON text", v)),
    }
}

/// A context: `{mode?, bot?, flags?, grants?}`.
pub fn context(env: &Env, v: Option<&Unknown>, what: &str) -> Result<Context> {
    let obj = options(env, v, what, &["mode", "bot", "flags", "grants"])?;
    let obj = obj.as_ref();
    let f = |key: &str| field(obj, key);
    Ok(Context {
        mode: opt_string(env, f("mode")?.as_ref(), &format!("{what}.mode"))?,
        bot: opt_string(env, f("bot")?.as_ref(), &format!("{what}.bot"))?,
        flags: opt_strings(env, f("flags")?.as_ref(), &format!("{what}.flags"))?
            .unwrap_or_default()
            .into_iter()
            .collect(),
        grants: opt_strings(env, f("grants")?.as_ref(), &format!("{what}.grants"))?,
    })
}

/// A result status: `"ok"` (the default), `"error"`, `"interrupted"` or `"missing"`.
pub fn status(env: &Env, v: Option<&Unknown>, what: &str) -> Result<ResultStatus> {
    let Some(text) = opt_string(env, v, what)? else {
        return Ok(ResultStatus::Ok);
    };
    toolpolicy::host::status(&text, what).map_err(|f| crate::error::raise(env, f))
}

/// The call-through tool's name from `callThrough: true | "name"`; `None`
/// for declared delivery.
pub fn call_through(env: &Env, v: Option<&Unknown>, what: &str) -> Result<Option<String>> {
    let Some(v) = v.filter(|v| !absent(v)) else {
        return Ok(None);
    };
    match v.get_type()? {
        ValueType::Boolean => {
            // SAFETY: the type was checked just above.
            let on: bool = unsafe { v.cast() }?;
            Ok(on.then(|| DEFAULT_CALL_TOOL.to_string()))
        }
        ValueType::String => string(env, v, what).map(Some),
        _ => Err(wrong(env, what, "a boolean or a tool name", v)),
    }
}

/// Audit logs: an array of file paths and `{text, name?}` objects of log
/// text (`name`, `log N` by default, names its bad lines).
pub fn logs(env: &Env, v: &Unknown, what: &str) -> Result<Vec<LogInput>> {
    if !v.is_array()? {
        return Err(wrong(
            env,
            what,
            "an array of paths and `{ text, name? }` objects",
            v,
        ));
    }
    // SAFETY: an array is an object.
    let array: Object = unsafe { v.cast() }?;
    let mut out = Vec::new();
    for i in 0..array.get_array_length()? {
        let item: Unknown = array.get_element(i)?;
        let at = format!("{what}[{i}]");
        if item.get_type()? == ValueType::String {
            out.push(LogInput::Path(string(env, &item, &at)?));
            continue;
        }
        if item.get_type()? != ValueType::Object || item.is_array()? {
            return Err(wrong(
                env,
                &at,
                "a path or a `{ text, name? }` object",
                &item,
            ));
        }
        let obj = options(env, Some(&item), &at, &["text", "name"])?;
        let text = match field(obj.as_ref(), "text")? {
            Some(t) => string(env, &t, &format!("{at}.text"))?,
            None => {
                return Err(usage(
                    env,
                    format!("{at} has no `text`"),
                    Some("give a log file's path, or `{ text }` with the log's text".into()),
                ));
            }
        };
        let name = opt_string(
            env,
            field(obj.as_ref(), "name")?.as_ref(),
            &format!("{at}.name"),
        )?
        .unwrap_or_else(|| format!("log {}", i + 1));
        out.push(LogInput::Text { name, text });
    }
    Ok(out)
}

/// The options of a report: `{caller?, since?}`.
pub fn report_options(env: &Env, v: Option<&Unknown>, what: &str) -> Result<ReportOptions> {
    let obj = options(env, v, what, &["caller", "since"])?;
    let f = |key: &str| field(obj.as_ref(), key);
    Ok(ReportOptions {
        caller: opt_string(env, f("caller")?.as_ref(), &format!("{what}.caller"))?,
        since: opt_string(env, f("since")?.as_ref(), &format!("{what}.since"))?,
    })
}
