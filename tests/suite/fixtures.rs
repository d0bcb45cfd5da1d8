//! Access to the shared third-party registries in `../shared/fixtures/registries/`.
//!
//! They are read in place, never copied into the project. Where the folder is
//! absent (a checkout without `../shared`), tests that need it say so and skip.

use std::path::PathBuf;

use toolpolicy::registry::{Registry, Tool};

/// The five fixture registries, in a fixed order.
pub const NAMES: [&str; 5] = [
    "github-mcp",
    "playwright-mcp",
    "mcp-reference-servers",
    "cjk-tools",
    "pi-builtin",
];

/// `../shared/fixtures/registries`, or the folder `TOOLPOLICY_FIXTURES`
/// names (for a checkout that does not sit beside `shared`, such as a git
/// worktree).
pub fn dir() -> PathBuf {
    match std::env::var_os("TOOLPOLICY_FIXTURES") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/registries"),
    }
}

/// One fixture registry, or `None` (with a message) when `../shared` is absent.
pub fn registry(name: &str) -> Option<Registry> {
    let path = dir().join(format!("{name}.json"));
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(
            Registry::from_json(&text)
                .unwrap_or_else(|e| panic!("fixture {} does not load: {e}", path.display())),
        ),
        Err(_) => {
            eprintln!(
                "skipped: {} is absent (the shared fixtures live beside the project)",
                path.display()
            );
            None
        }
    }
}

/// All five fixture registries joined into one (names are unique across files).
pub fn all() -> Option<Registry> {
    let mut tools: Vec<Tool> = Vec::new();
    for name in NAMES {
        tools.extend(registry(name)?.tools().iter().cloned());
    }
    Some(Registry::new(tools).expect("fixture names are unique across files"))
}
