//! The release packages (docs/install.md): one version in every manifest,
//! the npm launcher's shape (its two bins, no install script, one optional
//! dependency per line of `packaging/targets`), a release workflow that
//! reads its platforms from that file, and a crate whose package holds
//! what a build needs. tests/packaging/run installs the built packages.

use std::path::Path;

use crate::cli::support::root;

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn json(path: &str) -> serde_json::Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn crate_version(path: &str) -> String {
    let manifest: toml::Value = toml::from_str(&read(path)).expect("a TOML manifest");
    manifest["package"]["version"]
        .as_str()
        .expect("a version")
        .to_string()
}

/// The npm suffixes of packaging/targets, in its order.
fn target_suffixes() -> Vec<String> {
    read("packaging/targets")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(fields.len(), 3, "packaging/targets: `{l}`");
            fields[1].to_string()
        })
        .collect()
}

#[test]
fn every_manifest_carries_the_version_of_cargo_toml() {
    let version = crate_version("Cargo.toml");
    for path in ["bindings/node/Cargo.toml", "bindings/python/Cargo.toml"] {
        assert_eq!(crate_version(path), version, "{path}");
    }
    for path in [
        "bindings/node/package.json",
        "packaging/npm/toolpolicy/package.json",
    ] {
        let manifest = json(path);
        assert_eq!(manifest["version"], version.as_str(), "{path}");
        for (name, v) in manifest["optionalDependencies"]
            .as_object()
            .into_iter()
            .flatten()
        {
            assert_eq!(v, version.as_str(), "{path}: {name}");
        }
    }
    // The PyPI projects take theirs from Cargo.toml.
    for path in [
        "bindings/python/pyproject.toml",
        "packaging/pypi/toolpolicy-cli/pyproject.toml",
    ] {
        let project: toml::Value = toml::from_str(&read(path)).expect("pyproject.toml");
        assert!(project["project"].get("version").is_none(), "{path}");
        assert_eq!(
            project["project"]["dynamic"].as_array().map(Vec::len),
            Some(1),
            "{path}"
        );
    }
    let changelog = read("CHANGELOG.md");
    let top = changelog
        .lines()
        .find_map(|l| l.strip_prefix("## "))
        .expect("a release section");
    assert_eq!(
        top.split_whitespace().next(),
        Some(version.as_str()),
        "CHANGELOG.md"
    );
}

#[test]
fn the_npm_launcher_has_two_bins_no_install_script_and_every_platform() {
    let manifest = json("packaging/npm/toolpolicy/package.json");
    assert_eq!(manifest["name"], "toolpolicy");
    for bin in ["policy", "toolpolicy"] {
        let script = manifest["bin"][bin].as_str().expect("a bin");
        let launcher = root().join("packaging/npm/toolpolicy").join(script);
        assert!(launcher.is_file(), "{bin}: {}", launcher.display());
    }
    assert!(
        manifest.get("scripts").is_none(),
        "no script of any kind, install scripts least of all"
    );
    assert!(manifest.get("dependencies").is_none());
    let optional: Vec<&String> = manifest["optionalDependencies"]
        .as_object()
        .expect("optional dependencies")
        .keys()
        .collect();
    let expected: Vec<String> = target_suffixes()
        .iter()
        .map(|s| format!("@toolpolicy/cli-{s}"))
        .collect();
    assert_eq!(optional, expected.iter().collect::<Vec<_>>());
    // The launcher derives the package it looks for the way packaging/targets
    // names them.
    let launcher = read("packaging/npm/toolpolicy/bin/toolpolicy.js");
    assert!(launcher.contains("\"@toolpolicy/cli-\""));
    assert!(!launcher.contains("postinstall"));
}

#[test]
fn the_release_workflow_reads_its_platforms_from_the_targets_file() {
    let workflow = read(".github/workflows/release.yml");
    assert!(workflow.contains("packaging/targets"));
    for suffix in target_suffixes() {
        assert!(
            !workflow.contains(&suffix),
            "the workflow names `{suffix}`: a platform is a line of packaging/targets"
        );
    }
    for line in read("packaging/targets")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let triple = line.split_whitespace().next().unwrap_or_default();
        assert!(!workflow.contains(triple), "the workflow names `{triple}`");
    }
}

#[test]
fn the_crate_package_holds_the_grammar_and_the_lexicon_and_no_tests() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["package", "--list", "--allow-dirty", "--offline"])
        .current_dir(root())
        .output()
        .expect("cargo package --list");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8_lossy(&out.stdout);
    let files: Vec<&str> = listed.lines().collect();
    for needed in [
        "grammar/policy.pest",
        "src/search/data/wordnet.tsv",
        "src/search/data/cedict.tsv",
        "src/lib.rs",
        "src/bin/policy/main.rs",
        "Cargo.lock",
        "packaging/crates-io.md",
    ] {
        assert!(files.contains(&needed), "`{needed}` is not in the crate");
    }
    for file in &files {
        assert!(
            !file.starts_with("tests/")
                && !file.starts_with("fuzz/")
                && !file.starts_with("bindings/")
                && !file.starts_with("target/"),
            "`{file}` is in the crate"
        );
    }
    // Every file the sources include is in the package.
    for file in files.iter().filter(|f| f.ends_with(".rs")) {
        let text = std::fs::read_to_string(root().join(file)).unwrap_or_default();
        for (at, _) in text.match_indices("include_str!(\"") {
            let rest = &text[at + "include_str!(\"".len()..];
            let included = &rest[..rest.find('"').unwrap_or(0)];
            let path = Path::new(file)
                .parent()
                .unwrap_or(Path::new(""))
                .join(included);
            let path = path.to_string_lossy().replace('\\', "/");
            assert!(
                files.contains(&path.as_str()),
                "{file} includes `{included}`, not in the crate"
            );
        }
    }
}
