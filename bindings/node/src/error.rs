//! Errors as JavaScript sees them: an `Error` named `ToolPolicyError` with a
//! `diagnostics` array of `{code, severity, message, file, line, column}`
//! (plus `help` and, for registry entries, `path`), so a host can show a
//! policy's errors in place and a script can match on codes.

use napi::bindgen_prelude::{JsObjectValue, JsValue, Object};
use napi::{Env, Error, Result};
use toolpolicy::LoadErrors;
use toolpolicy::registry::LoadError;

pub use toolpolicy::host::Diag;
use toolpolicy::host::Failure;

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

/// A failure the library shaped, thrown.
pub fn raise(env: &Env, f: Failure) -> Error {
    throw(env, f.message, f.diagnostics)
}

/// A usage error: a wrong argument type, an unknown provider or mode.
pub fn usage(env: &Env, message: impl Into<String>, help: Option<String>) -> Error {
    raise(env, Failure::usage(message, help))
}

/// A policy that does not load: every diagnostic, located, the first in the
/// message.
pub fn policy(env: &Env, e: &LoadErrors) -> Error {
    raise(env, Failure::policy(e))
}

/// A registry or skill list that does not load, located by its entry path.
pub fn list(env: &Env, file: &str, e: &LoadError) -> Error {
    raise(env, Failure::list(file, e))
}

/// A context the policy cannot answer for (an undeclared mode).
pub fn context(env: &Env, e: &toolpolicy::ContextError) -> Error {
    raise(env, Failure::context(e))
}
