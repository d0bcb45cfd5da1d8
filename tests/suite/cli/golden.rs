//! The command line's output, pinned: each case runs `policy` from the project
//! folder with `NO_COLOR` set and compares its exit code, standard output and
//! standard error with `tests/golden/NAME.txt`.
//!
//! After a deliberate change of output, accept the new text with
//! `UPDATE_GOLDEN=1 cargo test --test suite cli::golden` and review the diff.

use std::path::{Path, PathBuf};
use std::process::Command;

const CASES: &[(&str, &[&str])] = &[
    // `policy check`: errors, lints, lints that need a registry, a folder.
    (
        "check-errors-human",
        &["check", "policies/invalid/many-errors.policy"],
    ),
    (
        "check-errors-plain",
        &[
            "check",
            "--format",
            "plain",
            "policies/invalid/many-errors.policy",
        ],
    ),
    (
        "check-errors-json",
        &[
            "check",
            "--format",
            "json",
            "policies/invalid/many-errors.policy",
        ],
    ),
    (
        "check-lints-human",
        &["check", "tests/data/lint/warnings.policy"],
    ),
    (
        "check-lints-plain",
        &[
            "check",
            "--format",
            "plain",
            "tests/data/lint/warnings.policy",
        ],
    ),
    (
        "check-lints-json",
        &[
            "check",
            "--format",
            "json",
            "tests/data/lint/warnings.policy",
        ],
    ),
    (
        "check-lints-deny-warnings",
        &[
            "check",
            "--deny-warnings",
            "--format",
            "plain",
            "tests/data/lint/warnings.policy",
        ],
    ),
    (
        "check-registry-plain",
        &[
            "check",
            "--format",
            "plain",
            "--registry",
            "tests/data/lint/registry.json",
            "--skills",
            "tests/data/lint/skills.json",
            "--max-tokens",
            "250",
            "tests/data/lint/names.policy",
        ],
    ),
    ("check-folder-human", &["check", "policies"]),
    // `policy explain`: one mode, every mode, JSON, the matrix.
    (
        "explain-human",
        &[
            "explain",
            "Bash",
            "--policy",
            "policies/pi-desktop.policy",
            "--mode",
            "agent",
        ],
    ),
    (
        "explain-per-mode-human",
        &[
            "explain",
            "computer_click",
            "--policy",
            "policies/aiden.policy",
            "--bot",
            "reviewer",
        ],
    ),
    (
        "explain-grant-human",
        &[
            "explain",
            "skill:deep-research",
            "--policy",
            "policies/aiden.policy",
            "--mode",
            "chat",
            "--bot",
            "reviewer",
        ],
    ),
    (
        "explain-json",
        &[
            "explain",
            "Bash",
            "--policy",
            "policies/pi-desktop.policy",
            "--mode",
            "chat",
            "--format",
            "json",
        ],
    ),
    (
        "explain-matrix-human",
        &[
            "explain",
            "--policy",
            "policies/github-toolsets.policy",
            "--registry",
            "tests/data/lint/registry.json",
            "--flag",
            "readonly",
        ],
    ),
    (
        "explain-matrix-plain",
        &[
            "explain",
            "--policy",
            "policies/aiden.policy",
            "--registry",
            "tests/data/lint/registry.json",
            "--skills",
            "tests/data/lint/skills.json",
            "--bot",
            "reviewer",
            "--format",
            "plain",
        ],
    ),
    (
        "explain-matrix-json",
        &[
            "explain",
            "--policy",
            "policies/aiden.policy",
            "--registry",
            "tests/data/lint/registry.json",
            "--skills",
            "tests/data/lint/skills.json",
            "--bot",
            "reviewer",
            "--format",
            "json",
        ],
    ),
    // `policy fmt --check` and `policy test` as they report problems.
    (
        "fmt-check-diff",
        &["fmt", "--check", "tests/data/fmt/messy.policy"],
    ),
    ("test-failures", &["test", "tests/data/test"]),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_policy"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("policy runs");
    let mut text = format!("$ policy {}\n", args.join(" "));
    text += &format!("exit: {}\n", out.status.code().unwrap_or(-1));
    text += "--- stdout\n";
    text += &String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.is_empty() {
        text += "--- stderr\n";
        text += &stderr;
    }
    text
}

fn golden_path(name: &str) -> PathBuf {
    root().join("tests/golden").join(format!("{name}.txt"))
}

#[test]
fn command_output_matches_the_golden_files() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, args) in CASES {
        let got = run(args);
        let path = golden_path(name);
        if update {
            std::fs::write(&path, &got).expect("golden file is writable");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if got != want {
            eprintln!(
                "--- {} (expected)\n{want}\n--- (got)\n{got}",
                path.display()
            );
            stale.push(name.to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "output differs from tests/golden/ for {stale:?}; if the change is intended, run \
         `UPDATE_GOLDEN=1 cargo test --test suite cli::golden` and review the diff"
    );
}

#[test]
fn every_golden_file_has_a_case() {
    let names: Vec<&str> = CASES.iter().map(|(n, _)| *n).collect();
    for entry in std::fs::read_dir(root().join("tests/golden")).expect("tests/golden exists") {
        let path = entry.expect("readable").path();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        assert!(
            names.contains(&stem),
            "{} has no case in tests/suite/cli/golden.rs",
            Path::new(&path).display()
        );
    }
}
