//! `policy lsp` in a real editor: tests/editor/run drives headless Neovim's
//! own LSP client (open, diagnostics, quick fix, hover, completion,
//! formatting, write) and checks the file it wrote. Skipped, with a message,
//! where Neovim is not installed, unless TOOLPOLICY_REQUIRE_NVIM is set.

use std::path::Path;
use std::process::Command;

#[test]
fn neovim_fixes_hovers_completes_and_formats_a_policy() {
    let nvim = std::env::var("NVIM").unwrap_or_else(|_| "nvim".into());
    let found = Command::new(&nvim)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("TOOLPOLICY_REQUIRE_NVIM").is_none(),
            "TOOLPOLICY_REQUIRE_NVIM is set, but Neovim (`{nvim}`) cannot be run"
        );
        eprintln!("skipped: Neovim (`{nvim}`) is not installed (apt-get install neovim)");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/editor/run");
    let out = Command::new("bash")
        .arg(&script)
        .env("POLICY_BIN", env!("CARGO_BIN_EXE_policy"))
        .env("NVIM", &nvim)
        .output()
        .expect("run tests/editor/run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed, 0 failed"),
        "tests/editor/run failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The scopes the grammar gives the first match of each pattern in `line`.
fn scopes(grammar: &serde_json::Value, line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (_, rule) in grammar["repository"].as_object().unwrap() {
        let rules: Vec<&serde_json::Value> = match rule["patterns"].as_array() {
            Some(p) => p.iter().collect(),
            None => vec![rule],
        };
        for r in rules {
            let Some(m) = r["match"].as_str() else {
                continue;
            };
            let re = regex::Regex::new(m).unwrap_or_else(|e| panic!("`{m}`: {e}"));
            let Some(c) = re.captures(line) else { continue };
            if let Some(name) = r["name"].as_str() {
                out.push(format!("{name}={}", &c[0]));
            }
            for (i, cap) in r["captures"].as_object().into_iter().flatten() {
                let i: usize = i.parse().unwrap();
                if let Some(text) = c.get(i).filter(|t| !t.is_empty()) {
                    out.push(format!(
                        "{}={}",
                        cap["name"].as_str().unwrap(),
                        text.as_str()
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn the_textmate_grammar_colours_each_part_of_a_policy() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/policy.tmLanguage.json");
    let grammar: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(grammar["scopeName"], "source.policy");
    let has = |line: &str, want: &str| {
        let s = scopes(&grammar, line);
        assert!(s.iter().any(|x| x == want), "{line:?}: {want} not in {s:?}");
    };
    has(
        "  NoDefer(Read, Bash)",
        "support.function.rule.policy=NoDefer",
    );
    has("defer(x)", "support.function.rule.policy=defer");
    has("mode agent {", "entity.name.section.policy=agent");
    has("  when !codemode {", "keyword.operator.negation.policy=!");
    has("guard new_context", "keyword.other.statement.policy=guard");
    has(
        "  activation = \"sticky\"",
        "variable.other.setting.policy=activation",
    );
    has(
        "  Grant(hint:read_only)",
        "storage.modifier.selector.policy=hint",
    );
    has("Defer(x) # why", "comment.line.number-sign.policy=# why");
    has(
        "  catalog_params = true",
        "constant.language.boolean.policy=true",
    );
}
