//! The bundled examples are the corpus: every policy in `policies/` loads
//! without errors, and every file in `policies/invalid/` fails with exactly the
//! codes its first line lists.

use std::path::{Path, PathBuf};
use std::process::Command;

use toolpolicy::Policy;

fn policies_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("policies")
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("policies/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "policy"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_bundled_policy_loads() {
    let files = files_in(&policies_dir());
    assert!(
        files.len() >= 4,
        "expected the bundled policies, found {files:?}"
    );
    for f in files {
        let bytes = std::fs::read(&f).expect("readable");
        if let Err(e) = Policy::from_bytes(f.display().to_string(), &bytes) {
            panic!("{} does not load:\n{e}", f.display());
        }
    }
}

/// The codes a file's `# expect:` line names, in order.
fn expected_codes(bytes: &[u8]) -> Vec<String> {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(first);
    let list = line
        .strip_prefix("# expect:")
        .unwrap_or_else(|| panic!("first line must be `# expect: PLxxx, ...`, found {line:?}"));
    list.split(',').map(|c| c.trim().to_string()).collect()
}

#[test]
fn every_invalid_policy_fails_with_its_codes() {
    let files = files_in(&policies_dir().join("invalid"));
    assert!(
        files.len() >= 10,
        "expected the invalid examples, found {files:?}"
    );
    for f in files {
        let bytes = std::fs::read(&f).expect("readable");
        let want = expected_codes(&bytes);
        // Through the library...
        let err = Policy::from_bytes(f.display().to_string(), &bytes)
            .expect_err(&format!("{} should fail to load", f.display()));
        let got: Vec<String> = err.diagnostics.iter().map(|d| d.code.to_string()).collect();
        assert_eq!(got, want, "{}", f.display());
        // ...and through the command, which exits 1 with the same codes in JSON.
        let out = Command::new(env!("CARGO_BIN_EXE_policy"))
            .args(["check", "--format", "json"])
            .arg(&f)
            .output()
            .expect("policy runs");
        assert_eq!(out.status.code(), Some(1), "{}", f.display());
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
        let codes: Vec<&str> = doc["diagnostics"]
            .as_array()
            .expect("diagnostics array")
            .iter()
            .map(|d| d["code"].as_str().expect("code"))
            .collect();
        assert_eq!(codes, want, "{}", f.display());
        for d in doc["diagnostics"].as_array().into_iter().flatten() {
            assert!(d["line"].as_u64().is_some_and(|l| l >= 1));
            assert!(d["column"].as_u64().is_some_and(|c| c >= 1));
            assert_eq!(d["severity"], "error");
        }
    }
}

#[test]
fn check_exit_codes() {
    let bin = env!("CARGO_BIN_EXE_policy");
    let good = policies_dir().join("pi-desktop.policy");
    let status = |args: &[&std::ffi::OsStr]| {
        Command::new(bin)
            .args(args)
            .output()
            .expect("runs")
            .status
            .code()
    };
    assert_eq!(status(&["check".as_ref(), good.as_os_str()]), Some(0));
    assert_eq!(
        status(&["check".as_ref(), "no/such/file.policy".as_ref()]),
        Some(2)
    );
    assert_eq!(
        status(&[
            "check".as_ref(),
            "--format".as_ref(),
            "yaml".as_ref(),
            good.as_os_str()
        ]),
        Some(2)
    );
    // A folder means every policy in it; invalid/ has errors.
    assert_eq!(
        status(&["check".as_ref(), policies_dir().join("invalid").as_os_str()]),
        Some(1)
    );
}
