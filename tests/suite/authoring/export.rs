//! `policy export`: every client's files, read back as the client reads
//! them, allow exactly what the decision table exposes in every context;
//! merging keeps foreign keys and comments; `--check` fails once a file
//! drifts; the bytes are the same every time.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use toolpolicy::decision::Exposure;
use toolpolicy::export::{self, Export, Fidelity, Model, json_edit};
use toolpolicy::{Policy, Registry};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap()
}

fn model(policy: &str, modes: &[&str], fidelity: Fidelity) -> Model {
    model_with(policy, modes, &[], fidelity)
}

fn model_with(policy: &str, modes: &[&str], flags: &[&str], fidelity: Fidelity) -> Model {
    let policy = Policy::parse(policy, read(policy)).unwrap();
    let registry = Registry::from_json(&read("examples/gateway/registry.json")).unwrap();
    let (servers, _) =
        export::read_servers(&read("examples/gateway/servers.json"), Path::new(ROOT)).unwrap();
    let modes: Vec<String> = modes.iter().map(|m| m.to_string()).collect();
    let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    export::model(&policy, &registry, servers, &modes, &flags, fidelity).unwrap()
}

fn file(out: &Export, path: &str) -> String {
    let f = out.files.iter().find(|f| f.path == path).unwrap();
    f.render("").unwrap()
}

fn json(out: &Export, path: &str) -> Value {
    serde_json::from_str(&file(out, path)).unwrap()
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// opencode's answer for `name`: the agent's map, then the top level; an
/// exact key before globs; on by default.
fn opencode_on(maps: &[&Value], name: &str) -> bool {
    for m in maps {
        let Some(m) = m.as_object() else { continue };
        if let Some(v) = m.get(name) {
            return v.as_bool().unwrap();
        }
        for (k, v) in m {
            if let Some(prefix) = k.strip_suffix('*')
                && name.starts_with(prefix)
            {
                return v.as_bool().unwrap();
            }
        }
    }
    true
}

/// The tools (gateway names) the client's files allow in context `label`.
fn allowed(client: &str, out: &Export, model: &Model, label: &str) -> BTreeSet<String> {
    let ctx = model.contexts.iter().find(|c| c.label() == label).unwrap();
    let mut on = BTreeSet::new();
    for r in &ctx.rows {
        let (s, t) = (&r.server, &r.tool);
        let yes = match client {
            "claude-code" => {
                let deny = strings(&json(out, ".claude/settings.json")["permissions"]["deny"]);
                let servers = json(out, ".mcp.json");
                servers["mcpServers"].get(s).is_some()
                    && !deny.contains(&format!("mcp__{s}"))
                    && !deny.contains(&format!("mcp__{s}__{t}"))
            }
            "codex" => {
                let doc: toml::Value = toml::from_str(&file(out, ".codex/config.toml")).unwrap();
                let e = &doc["mcp_servers"][s.as_str()];
                let list = |k: &str| -> BTreeSet<String> {
                    e[k].as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_str().unwrap().to_string())
                        .collect()
                };
                list("enabled_tools").contains(t) && !list("disabled_tools").contains(t)
            }
            "gemini-cli" | "qwen-code" => {
                let path = if client == "gemini-cli" {
                    ".gemini/settings.json"
                } else {
                    ".qwen/settings.json"
                };
                let e = &json(out, path)["mcpServers"][s.as_str()];
                strings(&e["includeTools"]).contains(t) && !strings(&e["excludeTools"]).contains(t)
            }
            "opencode" => {
                let doc = json(out, "opencode.json");
                let name = format!("{s}_{t}");
                match ctx.context.mode.as_deref() {
                    None => opencode_on(&[&doc["tools"]], &name),
                    Some(m) => opencode_on(&[&doc["agent"][m]["tools"], &doc["tools"]], &name),
                }
            }
            "zed" => {
                let doc = json(out, ".zed/settings.json");
                let p = &doc["agent"]["profiles"][label];
                assert_eq!(p["enable_all_context_servers"], false);
                p["context_servers"][s.as_str()]["tools"][t.as_str()] == true
            }
            "vscode" => {
                let text = file(out, &format!(".github/agents/{label}.agent.md"));
                let line = text.lines().find(|l| l.starts_with("tools: ")).unwrap();
                let tools: BTreeSet<&str> = line.split('\'').skip(1).step_by(2).collect();
                tools.contains(format!("{s}/{t}").as_str())
            }
            "goose" => {
                let text = file(out, "config.yaml");
                let doc = &yaml_rust2::YamlLoader::load_from_str(&text).unwrap()[0];
                let e = &doc["extensions"][s.as_str()];
                e["enabled"].as_bool().unwrap()
                    && e["available_tools"]
                        .as_vec()
                        .unwrap()
                        .iter()
                        .any(|x| x.as_str() == Some(t.as_str()))
            }
            other => panic!("no reader for {other}"),
        };
        if yes {
            on.insert(r.name.clone());
        }
    }
    on
}

/// Whether the client defers tools itself, so that a deferred tool is not
/// hidden by `--fidelity hide`.
fn defers(client: &str) -> bool {
    matches!(client, "claude-code" | "qwen-code")
}

/// A policy, the `--mode` sets it is exported with, and the flags.
type Case = (
    &'static str,
    Vec<Vec<&'static str>>,
    &'static [&'static str],
);

/// Every client, every context of both bundled policies, both fidelities:
/// what the files allow is the decision table's exposure, never more.
#[test]
fn every_client_allows_what_the_table_exposes() {
    let single = ["claude-code", "codex", "gemini-cli", "qwen-code", "goose"];
    let multi = ["opencode", "zed", "vscode"];
    let cases: Vec<Case> = vec![
        ("policies/gateway.policy", vec![vec![]], &[]),
        ("policies/gateway.policy", vec![vec![]], &["readonly"]),
        (
            "examples/gateway/modes.policy",
            vec![vec!["work"], vec!["review"], vec![]],
            &[],
        ),
    ];
    let mut checked = 0;
    for (policy, mode_sets, flags) in &cases {
        for modes in mode_sets {
            for fidelity in [Fidelity::Hide, Fidelity::Declare] {
                let m = model_with(policy, modes, flags, fidelity);
                for client in single.iter().chain(&multi) {
                    let out = match export::export(client, &m) {
                        Ok(o) => o,
                        Err(e) => {
                            assert!(
                                single.contains(client) && m.contexts.len() > 1,
                                "{client}: {e}"
                            );
                            assert!(e.contains("--mode"), "{e}");
                            continue;
                        }
                    };
                    for ctx in &m.contexts {
                        let on = allowed(client, &out, &m, ctx.label());
                        for r in &ctx.rows {
                            let want = match r.exposure {
                                Exposure::Active => true,
                                Exposure::Hidden => false,
                                Exposure::Deferred => {
                                    defers(client) || fidelity == Fidelity::Declare
                                }
                            };
                            assert_eq!(
                                on.contains(&r.name),
                                want,
                                "{client} {policy} {} {fidelity:?}: {} is {}",
                                ctx.label(),
                                r.name,
                                r.exposure
                            );
                            checked += 1;
                            if r.exposure == Exposure::Deferred && !defers(client) {
                                let lost = out
                                    .report
                                    .lost
                                    .iter()
                                    .find(|l| l.tool == r.name && l.mode == ctx.context.mode)
                                    .unwrap_or_else(|| panic!("{client}: {} not reported", r.name));
                                assert_eq!(lost.rule, r.rule);
                                assert!(lost.rule.as_deref().unwrap().contains(".policy:"));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}

#[test]
fn the_report_names_what_never_exports() {
    let m = model("policies/gateway.policy", &[], Fidelity::Hide);
    let out = export::export("codex", &m).unwrap();
    let features: Vec<&str> = out
        .report
        .features
        .iter()
        .map(|f| f.feature.as_str())
        .collect();
    assert!(
        features.iter().any(|f| f.contains("search")),
        "{features:?}"
    );
    assert!(features.iter().any(|f| f.contains("flag")), "{features:?}");
    let human = out.report.human();
    assert!(
        human.contains("behind `policy gateway` these hold"),
        "{human}"
    );
    assert!(!out.report.clean);
    // What the real clients do with a project's file (tests/e2e/test_export.py).
    let trust = out
        .report
        .notes
        .iter()
        .any(|n| n.contains("trusts the project"));
    assert!(trust, "{:?}", out.report.notes);
    let qwen = export::export("qwen-code", &m).unwrap();
    let approve = qwen
        .report
        .notes
        .iter()
        .any(|n| n.contains("`qwen mcp approve NAME`"));
    assert!(approve, "{:?}", qwen.report.notes);
    let e = export::export("nano", &m).unwrap_err();
    assert!(e.contains("claude-code"), "{e}");
}

fn policy_cmd(args: &[&str]) -> std::process::Output {
    let mut full = vec![
        "export",
        "--registry",
        "examples/gateway/registry.json",
        "--servers",
        "examples/gateway/servers.json",
    ];
    full.extend_from_slice(args);
    Command::new(env!("CARGO_BIN_EXE_policy"))
        .args(&full)
        .current_dir(ROOT)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn temp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("toolpolicy-export-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_bytes_are_the_same_every_time() {
    for client in [
        "claude-code",
        "codex",
        "gemini-cli",
        "opencode",
        "zed",
        "vscode",
    ] {
        let args = ["--to", client, "--policy", "policies/gateway.policy"];
        let a = policy_cmd(&args);
        let b = policy_cmd(&args);
        assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
        assert!(!a.stdout.is_empty());
        assert_eq!(a.stdout, b.stdout, "{client}");
        assert_eq!(a.stderr, b.stderr, "{client}");
    }
}

#[test]
fn merging_keeps_foreign_keys_and_comments_and_check_sees_drift() {
    let d = temp("merge");
    let oc = d.join("opencode.json");
    let before = "{\n  // my theme, kept\n  \"theme\": \"tokyonight\",\n  \"tools\": {\"bash\": false, /* mine */ \"memory_old\": true,},\n  \"mcp\": {\"other\": {\"type\": \"remote\", \"url\": \"https://x.example/mcp\"}},\n}\n";
    std::fs::write(&oc, before).unwrap();
    let oc_s = oc.to_str().unwrap();
    let p = "policies/gateway.policy";
    let out = policy_cmd(&["--to", "opencode", "--policy", p, "--out", oc_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = std::fs::read_to_string(&oc).unwrap();
    assert!(
        after.starts_with("{\n  // my theme, kept\n  \"theme\": \"tokyonight\","),
        "{after}"
    );
    let v = json_edit::plain(&after).unwrap();
    assert_eq!(v["tools"]["bash"], false, "{after}");
    assert!(
        v["tools"].get("memory_old").is_none(),
        "an owned entry stays: {after}"
    );
    assert_eq!(v["tools"]["memory_*"], false, "{after}");
    assert_eq!(v["mcp"]["other"]["url"], "https://x.example/mcp");
    assert_eq!(v["mcp"]["filesystem"]["type"], "local");
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys[..3], ["theme", "tools", "mcp"], "order kept: {after}");

    let ok = policy_cmd(&["--to", "opencode", "--policy", p, "--check", oc_s]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    assert!(ok.stdout.is_empty());
    std::fs::write(
        &oc,
        after.replace("\"memory_*\": false", "\"memory_*\": true"),
    )
    .unwrap();
    let drift = policy_cmd(&["--to", "opencode", "--policy", p, "--check", oc_s]);
    assert_eq!(drift.status.code(), Some(1));
    let diff = String::from_utf8_lossy(&drift.stdout);
    assert!(
        diff.contains("-    \"memory_*\": true") && diff.contains("+    \"memory_*\": false"),
        "{diff}"
    );

    // Codex's TOML: comments, foreign tables and keys stay.
    let cx = d.join("config.toml");
    let toml_before = "# my model\nmodel = \"o3\"\n\n[mcp_servers.mine]\ncommand = \"mine\" # kept\n\n# the files\n[mcp_servers.filesystem]\ncommand = \"old\"\n";
    std::fs::write(&cx, toml_before).unwrap();
    let cx_s = cx.to_str().unwrap();
    let out = policy_cmd(&["--to", "codex", "--policy", p, "--out", cx_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = std::fs::read_to_string(&cx).unwrap();
    assert!(after.starts_with("# my model\nmodel = \"o3\"\n\n[mcp_servers.mine]\ncommand = \"mine\" # kept\n\n# the files\n[mcp_servers.filesystem]\n"), "{after}");
    assert!(!after.contains("\"old\""), "{after}");
    let doc: toml::Value = toml::from_str(&after).unwrap();
    assert_eq!(
        doc["mcp_servers"]["memory"]["enabled_tools"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let ok = policy_cmd(&["--to", "codex", "--policy", p, "--check", cx_s]);
    assert_eq!(ok.status.code(), Some(0));
    std::fs::write(
        &cx,
        after.replace("disabled_tools = [\"echo\", ", "disabled_tools = ["),
    )
    .unwrap();
    let drift = policy_cmd(&["--to", "codex", "--policy", p, "--check", cx_s]);
    assert_eq!(drift.status.code(), Some(1));

    // Claude Code's two files under a folder; a foreign deny rule stays.
    let cc = d.join("project");
    std::fs::create_dir_all(cc.join(".claude")).unwrap();
    std::fs::write(
        cc.join(".claude/settings.json"),
        "{\"permissions\": {\"deny\": [\"Bash(rm *)\", \"mcp__memory__old\"]}}",
    )
    .unwrap();
    let cc_s = cc.to_str().unwrap();
    let out = policy_cmd(&["--to", "claude-code", "--policy", p, "--out", cc_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(cc.join(".claude/settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        strings(&s["permissions"]["deny"]),
        ["Bash(rm *)", "mcp__everything__get-env"]
            .map(String::from)
            .into()
    );
    assert!(cc.join(".mcp.json").is_file());
    let ok = policy_cmd(&["--to", "claude-code", "--policy", p, "--check", cc_s]);
    assert_eq!(ok.status.code(), Some(0));
    // goose's file is written whole, never over a file of yours.
    let goose = d.join("config.yaml");
    std::fs::write(&goose, "GOOSE_MODEL: x\n").unwrap();
    let g_s = goose.to_str().unwrap();
    let refused = policy_cmd(&["--to", "goose", "--policy", p, "--out", g_s]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("new file"));
    assert_eq!(std::fs::read_to_string(&goose).unwrap(), "GOOSE_MODEL: x\n");
    let file_not_folder = policy_cmd(&["--to", "claude-code", "--policy", p, "--check", cx_s]);
    assert_eq!(file_not_folder.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&file_not_folder.stderr).contains("folder"));
}

#[test]
fn usage_errors_say_what() {
    let d = temp("usage");
    let out = policy_cmd(&["--to", "codex", "--policy", "examples/gateway/modes.policy"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--mode") && err.contains("work") && err.contains("review"),
        "{err}"
    );
    let out = policy_cmd(&[
        "--to",
        "codex",
        "--policy",
        "examples/gateway/modes.policy",
        "--mode",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
    let bad = d.join("servers.json");
    std::fs::write(&bad, "{\"mcpServers\": {\"a__b\": {\"command\": \"x\"}}}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_policy"))
        .args([
            "export",
            "--to",
            "codex",
            "--policy",
            "policies/gateway.policy",
        ])
        .args(["--registry", "examples/gateway/registry.json", "--servers"])
        .arg(&bad)
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mcpServers.a__b"));
    let json = policy_cmd(&[
        "--to",
        "gemini-cli",
        "--policy",
        "policies/gateway.policy",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(v["files"][".gemini/settings.json"].is_string());
    assert_eq!(v["report"]["note"], "behind `policy gateway` these hold");
    assert!(v["report"]["lost"].as_array().unwrap().len() > 10);
}

/// Zed's settings are JSON with comments: a profile and a server of the
/// user's stay, with the comments, beside the exported ones.
#[test]
fn zed_settings_keep_the_users_profiles_and_comments() {
    let d = temp("zed");
    let f = d.join("settings.json");
    let before = r#"// Zed settings
//
// For information on how to configure Zed, see the Zed documentation.
{
  "ui_font_size": 16,
  "agent": {
    "profiles": {
      // mine
      "write": { "name": "Write", "tools": { "edit_file": true } },
    },
  },
  "context_servers": {
    "other": { "source": "custom", "command": "other-mcp" },
  },
}
"#;
    std::fs::write(&f, before).unwrap();
    let f_s = f.to_str().unwrap();
    let p = "examples/gateway/modes.policy";
    let out = policy_cmd(&["--to", "zed", "--policy", p, "--out", f_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = std::fs::read_to_string(&f).unwrap();
    assert!(
        after.starts_with("// Zed settings\n//\n// For information"),
        "{after}"
    );
    assert!(
        after.contains("      // mine\n      \"write\": { \"name\": \"Write\""),
        "{after}"
    );
    let v = json_edit::plain(&after).unwrap();
    assert_eq!(v["ui_font_size"], 16);
    assert_eq!(v["context_servers"]["other"]["command"], "other-mcp");
    assert_eq!(v["context_servers"]["filesystem"]["command"], "npx");
    let review = &v["agent"]["profiles"]["review"]["context_servers"]["filesystem"]["tools"];
    assert_eq!(review["write_file"], false);
    assert_eq!(review["read_text_file"], true);
    assert!(v["agent"]["profiles"]["work"].is_object());
    let ok = policy_cmd(&["--to", "zed", "--policy", p, "--check", f_s]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
}

/// A value's shape in a client's documented settings.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Text,
    Texts,
    TextMap,
    Number,
    Bool,
}

fn has_shape(v: &Value, shape: Shape) -> bool {
    match shape {
        Shape::Text => v.is_string(),
        Shape::Texts => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        Shape::TextMap => v
            .as_object()
            .is_some_and(|m| m.values().all(Value::is_string)),
        Shape::Number => v.is_number(),
        Shape::Bool => v.is_boolean(),
    }
}

/// The keys of an `mcpServers` entry and their shapes, as Gemini CLI's
/// documentation of its settings names them (Qwen Code reads the same
/// entries). Gemini CLI is not installed where the tests run, so its files
/// are held to what its documentation says it reads.
const GEMINI_SERVER_KEYS: [(&str, Shape); 12] = [
    ("command", Shape::Text),
    ("args", Shape::Texts),
    ("env", Shape::TextMap),
    ("cwd", Shape::Text),
    ("url", Shape::Text),
    ("httpUrl", Shape::Text),
    ("headers", Shape::TextMap),
    ("timeout", Shape::Number),
    ("trust", Shape::Bool),
    ("description", Shape::Text),
    ("includeTools", Shape::Texts),
    ("excludeTools", Shape::Texts),
];

#[test]
fn gemini_settings_hold_only_the_documented_keys_in_their_documented_shapes() {
    let d = temp("gemini-keys");
    let servers = r#"{
      "mcpServers": {
        "filesystem": {
          "command": "npx",
          "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
          "env": { "ROOT": "${HOME}/work" },
          "cwd": "."
        },
        "memory": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"] },
        "everything": {
          "type": "http",
          "url": "https://tools.example.com/mcp",
          "headers": { "Authorization": "Bearer ${TOOLS_TOKEN}" }
        }
      }
    }"#;
    let policy = Policy::parse(
        "gemini.policy",
        "Hide(filesystem__write*)\nHide(memory__delete*)\nDefer(everything__*)\n",
    )
    .unwrap();
    let registry = Registry::from_json(&read("examples/gateway/registry.json")).unwrap();
    let (servers, _) = export::read_servers(servers, &d).unwrap();
    let m = export::model(&policy, &registry, servers, &[], &[], Fidelity::Hide).unwrap();
    for (client, path) in [
        ("gemini-cli", ".gemini/settings.json"),
        ("qwen-code", ".qwen/settings.json"),
    ] {
        let out = export::export(client, &m).unwrap();
        let doc = json(&out, path);
        let entries = doc["mcpServers"].as_object().expect("mcpServers");
        assert_eq!(entries.len(), 3, "{client}: {doc}");
        for (name, entry) in entries {
            let entry = entry.as_object().unwrap();
            for (key, value) in entry {
                let shape = GEMINI_SERVER_KEYS
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, s)| *s)
                    .unwrap_or_else(|| {
                        panic!("{client}: `{name}` has `{key}`, not a documented key")
                    });
                assert!(
                    has_shape(value, shape),
                    "{client}: `{name}.{key}` is {value}, not {shape:?}"
                );
            }
            let transports = ["command", "url", "httpUrl"]
                .iter()
                .filter(|k| entry.contains_key(**k))
                .count();
            assert_eq!(
                transports, 1,
                "{client}: `{name}` needs one of command, url, httpUrl"
            );
        }
        // Streamable HTTP is `httpUrl` (`url` is the older SSE transport);
        // `${VAR}` stays for the client to expand.
        let remote = &doc["mcpServers"]["everything"];
        assert_eq!(
            remote["httpUrl"], "https://tools.example.com/mcp",
            "{client}"
        );
        assert_eq!(remote["headers"]["Authorization"], "Bearer ${TOOLS_TOKEN}");
        assert_eq!(
            doc["mcpServers"]["filesystem"]["env"]["ROOT"],
            "${HOME}/work"
        );
        // Hidden tools are excluded and never included.
        let fs = &doc["mcpServers"]["filesystem"];
        assert!(
            strings(&fs["excludeTools"]).contains("write_file"),
            "{client}: {fs}"
        );
        assert!(
            strings(&fs["includeTools"]).contains("read_file"),
            "{client}: {fs}"
        );
        assert!(
            !strings(&fs["includeTools"]).contains("write_file"),
            "{client}: {fs}"
        );
        if client == "gemini-cli" {
            // Gemini CLI cannot defer (`--fidelity hide`): a server with
            // nothing exposed gets an empty `includeTools`, which it reads as
            // "none", and every tool in `excludeTools`.
            assert!(
                remote["includeTools"].as_array().is_some_and(Vec::is_empty),
                "{remote}"
            );
            assert!(strings(&remote["excludeTools"]).len() > 3, "{remote}");
            assert!(doc.get("tools").is_none(), "{doc}");
        } else {
            // Qwen Code's tool search defers what is included; the active
            // tools are made visible from the first turn, the deferred not.
            assert!(strings(&remote["includeTools"]).len() > 3, "{remote}");
            assert!(strings(&remote["excludeTools"]).is_empty(), "{remote}");
            let visible = strings(&doc["tools"]["visible"]);
            assert!(
                visible.contains("mcp__filesystem__read_file"),
                "{visible:?}"
            );
            assert!(
                !visible.contains("mcp__filesystem__write_file"),
                "{visible:?}"
            );
            assert!(
                visible.iter().all(|t| !t.starts_with("mcp__everything__")),
                "{visible:?}"
            );
        }
    }
}

/// Codex expands nothing in its config: a value that is one whole `${VAR}`
/// is written the way Codex takes a variable by name, the rest as written
/// and reported.
#[test]
fn codex_takes_variables_by_name_where_it_can() {
    let d = temp("codex-vars");
    let servers = r#"{
      "mcpServers": {
        "memory": {
          "command": "mcp-server-memory",
          "env": { "MEMORY_FILE_PATH": "${MEMORY_FILE_PATH}", "MODE": "${OTHER}", "LEVEL": "3" }
        },
        "everything": {
          "type": "http",
          "url": "https://tools.example.com/mcp",
          "headers": {
            "Authorization": "Bearer ${TOOLS_TOKEN}",
            "X-Team": "${TEAM}",
            "X-Region": "eu-${REGION:-west}",
            "X-Plain": "yes"
          }
        }
      }
    }"#;
    let policy = Policy::parse("codex.policy", "Hide(memory__delete*)\n").unwrap();
    let registry = Registry::from_json(&read("examples/gateway/registry.json")).unwrap();
    let (servers, _) = export::read_servers(servers, &d).unwrap();
    let m = export::model(&policy, &registry, servers, &[], &[], Fidelity::Hide).unwrap();
    let out = export::export("codex", &m).unwrap();
    let doc: toml::Value = toml::from_str(&file(&out, ".codex/config.toml")).unwrap();
    let memory = &doc["mcp_servers"]["memory"];
    assert_eq!(
        memory["env_vars"],
        toml::Value::Array(vec!["MEMORY_FILE_PATH".into()])
    );
    let env = memory["env"].as_table().unwrap();
    assert!(!env.contains_key("MEMORY_FILE_PATH"), "{env:?}");
    // Another variable's name cannot be passed on under this one.
    assert_eq!(env["MODE"].as_str(), Some("${OTHER}"));
    assert_eq!(env["LEVEL"].as_str(), Some("3"));
    let remote = &doc["mcp_servers"]["everything"];
    assert_eq!(remote["bearer_token_env_var"].as_str(), Some("TOOLS_TOKEN"));
    assert_eq!(remote["env_http_headers"]["X-Team"].as_str(), Some("TEAM"));
    let plain = remote["http_headers"].as_table().unwrap();
    assert_eq!(plain["X-Region"].as_str(), Some("eu-${REGION:-west}"));
    assert_eq!(plain["X-Plain"].as_str(), Some("yes"));
    assert!(!plain.contains_key("Authorization"), "{plain:?}");
    let notes = out.report.notes.join("\n");
    assert!(notes.contains("`env_vars`"), "{notes}");
}
