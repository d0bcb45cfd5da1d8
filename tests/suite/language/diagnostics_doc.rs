//! `docs/diagnostics.md` documents every code, and its examples are true: each
//! one produces its code, at the position and with the message the page shows.

use std::path::Path;

use toolpolicy::diag::{Code, Severity};
use toolpolicy::lint::{Options, lint_with};
use toolpolicy::{Policy, Registry, SkillList};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn doc() -> String {
    std::fs::read_to_string(root().join("docs/diagnostics.md")).expect("docs/diagnostics.md")
}

/// The text of each `### PLxxx` section.
fn sections(doc: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for part in doc.split("\n### ").skip(1) {
        let (head, body) = part.split_once('\n').unwrap_or((part, ""));
        let body = body.split("\n## ").next().unwrap_or(body);
        out.push((head.trim().to_string(), body.to_string()));
    }
    out
}

/// The first fenced block of a kind (`policy`, `text`) in a section.
fn block<'a>(body: &'a str, kind: &str) -> Option<&'a str> {
    let start = body.find(&format!("```{kind}\n"))? + kind.len() + 4;
    let len = body[start..].find("```")?;
    Some(&body[start..start + len])
}

#[test]
fn every_code_is_documented() {
    let doc = doc();
    let headings: Vec<String> = sections(&doc).into_iter().map(|(h, _)| h).collect();
    for code in Code::ALL {
        assert!(
            headings.iter().any(|h| h == code.as_str()),
            "{code} has no `### {code}` section in docs/diagnostics.md"
        );
        assert!(
            doc.contains(&format!("[{code}](#{})", code.as_str().to_lowercase())),
            "{code} is missing from the table in docs/diagnostics.md"
        );
    }
}

#[test]
fn every_code_the_invalid_examples_expect_is_documented() {
    let doc = doc();
    for entry in std::fs::read_dir(root().join("policies/invalid")).expect("policies/invalid") {
        let bytes = std::fs::read(entry.expect("entry").path()).expect("readable");
        let first =
            String::from_utf8_lossy(bytes.split(|&b| b == b'\n').next().unwrap_or_default())
                .to_string();
        for code in first.trim_start_matches("# expect:").split(',') {
            let code = code.trim();
            assert!(
                doc.contains(&format!("### {code}")),
                "{code} (expected by policies/invalid) is not documented"
            );
        }
    }
}

#[test]
fn every_example_produces_its_code_as_shown() {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).expect("test data");
    let registry = Registry::from_json(&read("tests/data/lint/registry.json")).expect("registry");
    let annotated =
        Registry::from_json(&read("tests/data/lint/annotated.json")).expect("annotated registry");
    let skills = SkillList::from_json(&read("tests/data/lint/skills.json")).expect("skills");
    for (code, body) in sections(&doc()) {
        if let Some(registry) = block(&body, "json") {
            registry_example(&code, registry, block(&body, "text").unwrap_or_default());
            continue;
        }
        let Some(example) = block(&body, "policy") else {
            assert_eq!(code, "PL010", "{code} has no ```policy example");
            continue;
        };
        // The example is checked with what its `$ policy check ...` line gives.
        let text = block(&body, "text").unwrap_or_default();
        let command = text
            .lines()
            .find(|l| l.starts_with("$ policy check"))
            .unwrap_or("");
        let max_tokens = command
            .split_once("--max-tokens ")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|n| n.parse().ok());
        let options = Options {
            registry: match command.split_once("--registry ") {
                Some((_, rest)) if rest.starts_with("tests/data/lint/annotated.json") => {
                    Some(&annotated)
                }
                Some(_) => Some(&registry),
                None => None,
            },
            skills: command.contains("--skills").then_some(&skills),
            max_tokens,
            engine_search: command.contains("--engine-tools"),
        };
        let (mut policy, mut diags) = Policy::parse_with_diagnostics(
            toolpolicy::diag::SourceFile::new("example.policy", example),
        );
        // A lock the example names is read as `policy check` reads it, from
        // the folder of the policy, here the repository's root.
        if !diags.iter().any(|d| d.severity == Severity::Error)
            && let Err(e) = toolpolicy::lock::attach(&mut policy, &root().join("example.policy"))
        {
            diags.extend(e.diagnostics);
        }
        if !diags.iter().any(|d| d.severity == Severity::Error) {
            diags.extend(lint_with(&policy, &options));
        }
        let shown: Vec<String> = diags
            .iter()
            .filter(|d| d.code.as_str() == code)
            .map(|d| {
                let (line, col) = policy.source.line_col(d.span.start);
                format!(
                    "{line}:{col}: {}[{}]: {}",
                    d.severity.as_str(),
                    d.code,
                    d.message
                )
            })
            .collect();
        assert!(
            !shown.is_empty(),
            "the {code} example does not produce {code}: {diags:?}"
        );
        let line = text
            .lines()
            .find(|l| l.contains(&format!("[{code}]")))
            .unwrap_or_else(|| panic!("the {code} section shows no `[{code}]` line"));
        assert!(
            shown.iter().any(|s| s == line),
            "docs/diagnostics.md shows for {code}:\n  {line}\nbut the example gives:\n  {}",
            shown.join("\n  ")
        );
    }
}

/// A registry code's example: a registry (` ```json `) whose findings, printed
/// as `policy check` prints them for `tools.json`, include the line shown.
fn registry_example(code: &str, registry: &str, text: &str) {
    let registry = Registry::from_json(registry).expect("the example registry loads");
    let shown: Vec<String> = toolpolicy::lint::registry(&registry)
        .iter()
        .filter(|w| w.code.as_str() == code)
        .map(|w| {
            let help = w.help.as_deref().unwrap_or_default();
            format!("tools.json: warning[{code}]: {w} (help: {help})")
        })
        .collect();
    let line = text
        .lines()
        .find(|l| l.contains(&format!("[{code}]")))
        .unwrap_or_else(|| panic!("the {code} section shows no `[{code}]` line"));
    assert!(
        shown.iter().any(|s| s == line),
        "docs/diagnostics.md shows for {code}:\n  {line}\nbut the example gives:\n  {}",
        shown.join("\n  ")
    );
}
