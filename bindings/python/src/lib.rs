//! The toolpolicy engine as a native Python module (`toolpolicy._native`,
//! re-exported by the `toolpolicy` package).
//!
//! A thin adapter: every decision is the library's. This crate only reads
//! Python values into the library's inputs (checking their types itself, so
//! that a mistake reads in Python's terms, never as a Rust type name), and
//! writes the library's answers back as plain dicts, lists and tuples. What
//! the engine refuses is a `ToolPolicyError` whose `diagnostics` list says
//! where and what, and a panic inside is one too; an argument of the wrong
//! type is a `TypeError`, one of a wrong value a `ValueError`, as in Python
//! itself. The GIL is released while the engine works.
//!
//! - [`engine`]: `Engine`, shared by every chat and thread; hot reload
//!   keeps the last good one.
//! - [`session`]: `Session`, one chat: plan, search, load, call, evidence.
//! - [`cache`]: the Python objects plans share, per snapshot and per chat.
//! - [`args`]: reading Python arguments, and their type and value errors.
//! - [`convert`]: JSON values as Python objects.
//! - [`error`]: errors with diagnostics.

mod args;
mod cache;
mod convert;
mod engine;
mod error;
mod session;

use pyo3::prelude::*;

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<engine::Engine>()?;
    m.add_class::<session::Session>()?;
    m.add(
        "ToolPolicyError",
        m.py().get_type::<error::ToolPolicyError>(),
    )?;
    m.add_function(wrap_pyfunction!(engine::read_input, m)?)?;
    m.add_function(wrap_pyfunction!(engine::lock_text, m)?)?;
    m.add_function(wrap_pyfunction!(engine::audit_report, m)?)?;
    m.add_function(wrap_pyfunction!(engine::time_in_rust, m)?)?;
    m.add_function(wrap_pyfunction!(panic_for_tests, m)?)?;
    Ok(())
}

/// Panics inside the module, for the test that a panic reaches Python as a
/// `ToolPolicyError` rather than taking the interpreter down.
#[pyfunction]
#[pyo3(name = "_panic_for_tests")]
fn panic_for_tests() -> PyResult<()> {
    error::guard(|| panic!("a panic on purpose"))
}
