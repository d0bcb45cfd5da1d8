//! What the gateway tells a newcomer about their own servers: `policy
//! registry` writes the registry the gateway serves, and the gateway lints
//! its policy against that registry. Against the fixture server.

use serde_json::{Value, json};

use crate::gateway::support::*;

const TOOLS: &str = "echo,secret,slow,fail";

const POLICY: &str = "\
guard fx__echo
Hide(fx__secret)
Defer(*)
";

#[test]
fn registry_writes_what_the_gateway_serves_and_plans_read_it_back() {
    let dir = temp_dir("registry");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture(TOOLS, &[]))]);
    let out = dir.join("registry.json");
    let (code, stdout, err) = policy_to_end(&[
        "registry",
        "--servers",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(err.contains("wrote 4 tools to"), "{err}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let tools = doc["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["fx__echo", "fx__secret", "fx__slow", "fx__fail"]);
    for t in tools {
        assert_eq!(t["source"], json!("mcp:fx"), "{t}");
    }
    assert_eq!(
        tools[2]["description"],
        json!("Tool slow of the fixture. It does what its name says.")
    );
    assert!(
        tools[0]["inputSchema"]["properties"]["text"].is_object(),
        "{}",
        tools[0]
    );

    // The written file gives the plan the gateway's dry run shows.
    let (code, plan, err) = policy_to_end(&[
        "plan",
        "--policy",
        p.to_str().unwrap(),
        "--registry",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let plan: Value = serde_json::from_str(&plan).unwrap();
    let (code, dry, err) = run_to_end(&file_args(&p, &s, &["--dry-run", "--format", "json"]));
    assert_eq!(code, Some(0), "{err}");
    let dry: Value = serde_json::from_str(&dry).unwrap();
    let own = ["tool_search", "call_tool"];
    let listed: Vec<&Value> = dry["listed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| !own.contains(&n.as_str().unwrap()))
        .collect();
    let declared: Vec<&Value> = plan["declared"].as_array().unwrap().iter().collect();
    assert_eq!(declared, listed);
    assert_eq!(plan["catalog"], dry["catalog"]);
    assert_eq!(plan["deferred"].as_array().unwrap().len(), 2);
    assert_eq!(dry["deferred"], json!(2));
    assert_eq!(plan["hidden"], json!(["fx__secret"]));

    // Without `--out`, the registry is standard output.
    let (code, stdout, err) = policy_to_end(&["registry", "--servers", s.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let again: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(again, doc);
}

#[test]
fn registry_writes_nothing_when_a_server_does_not_start() {
    let dir = temp_dir("registry-down");
    let (_, s) = files(
        &dir,
        POLICY,
        &[
            ("fx", fixture(TOOLS, &[])),
            ("down", fixture("echo", &[("FIXTURE_EXIT_AT_START", "1")])),
        ],
    );
    let out = dir.join("registry.json");
    let (code, _, err) = policy_to_end(&[
        "registry",
        "--servers",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no registry written: server `down`"), "{err}");
    assert!(!out.exists());
}

/// A `NoDefer` whose tool name is one letter off.
const TYPO: &str = "\
search tool_search
NoDefer(fx__echo, fx__slwo)
Defer(*)
";

#[test]
fn the_gateway_lints_its_policy_against_the_live_registry() {
    let dir = temp_dir("lints");
    let (p, s) = files(&dir, TYPO, &[("fx", fixture(TOOLS, &[]))]);
    let (code, _, err) = run_to_end(&file_args(&p, &s, &["--dry-run"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("warning[PL105]: `fx__slwo` matches no tool in the registry (help: did you mean `fx__slow`"),
        "{err}"
    );
    // The engine's own search tool is supplied, not missing.
    assert!(!err.contains("`tool_search` matches"), "{err}");
    assert!(!err.contains("PL101"), "{err}");
    assert!(
        err.contains("lints of `") && err.contains("against the servers' 4 tools: 1 warning"),
        "{err}"
    );

    // A server that did not start is named: its tools are not wrong, only unknown.
    let down = temp_dir("lints-down");
    let (p2, s2) = files(
        &down,
        "search tool_search\nNoDefer(fx__echo, down__echo)\nDefer(*)\n",
        &[
            ("fx", fixture(TOOLS, &[])),
            ("down", fixture("echo", &[("FIXTURE_EXIT_AT_START", "1")])),
        ],
    );
    let (code, _, err) = run_to_end(&file_args(&p2, &s2, &["--dry-run"]));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("`down__echo` matches no tool"), "{err}");
    assert!(err.contains("(no tools listed by `down`"), "{err}");

    let fixed = TYPO.replace("slwo", "slow");
    std::fs::write(&p, &fixed).unwrap();
    let (code, _, err) = run_to_end(&file_args(&p, &s, &["--dry-run"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("against the servers' 4 tools: none"), "{err}");
    assert!(!err.contains("warning["), "{err}");
}

#[cfg(unix)]
#[test]
fn the_gateway_lints_at_start_and_at_every_reload() {
    let dir = temp_dir("lints-reload");
    let (p, s) = files(
        &dir,
        &TYPO.replace("slwo", "slow"),
        &[("fx", fixture(TOOLS, &[]))],
    );
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25");
    g.list();
    assert!(g.wait_stderr("tools: none", 1), "{}", g.stderr());
    std::fs::write(&p, TYPO).unwrap();
    g.signal("HUP");
    assert!(g.wait_stderr("note: reloaded", 1), "{}", g.stderr());
    assert!(
        g.wait_stderr("`fx__slwo` matches no tool", 1),
        "{}",
        g.stderr()
    );
    assert!(g.wait_stderr("tools: 1 warning", 1), "{}", g.stderr());
    // A client's pipe is no terminal: no word about how to run it.
    assert!(!g.stderr().contains("serving MCP"), "{}", g.stderr());
    g.finish();
}

#[test]
fn a_served_gateway_notes_a_listed_tool_that_says_it_is_deprecated() {
    let dir = temp_dir("deprecated");
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[("fx", fixture("echo,old_echo", &[]))],
    );
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25");
    g.list();
    assert!(
        g.wait_stderr(
            "note: `fx__old_echo` is listed, and its title or description says it is deprecated",
            1
        ),
        "{}",
        g.stderr()
    );
    assert!(
        !g.stderr().contains("`fx__echo` is listed"),
        "{}",
        g.stderr()
    );
    g.finish();
}

#[test]
fn measure_and_the_dry_run_give_the_same_token_figures() {
    let dir = temp_dir("agree");
    let policy = "search tool_search\nNoDefer(fx__echo)\nHide(fx__secret)\nDefer(*)\n";
    let (p, s) = files(&dir, policy, &[("fx", fixture(TOOLS, &[]))]);
    let reg = dir.join("registry.json");
    let (code, _, err) = policy_to_end(&[
        "registry",
        "--servers",
        s.to_str().unwrap(),
        "--out",
        reg.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    for exposure in ["call", "list-changed"] {
        let (code, dry, err) = run_to_end(&file_args(
            &p,
            &s,
            &["--dry-run", "--format", "json", "--exposure", exposure],
        ));
        assert_eq!(code, Some(0), "{err}");
        let dry: Value = serde_json::from_str(&dry).unwrap();
        let (code, measured, err) = policy_to_end(&[
            "measure",
            "--policy",
            p.to_str().unwrap(),
            "--registry",
            reg.to_str().unwrap(),
            "--exposure",
            exposure,
            "--format",
            "json",
        ]);
        assert_eq!(code, Some(0), "{err}");
        let measured: Value = serde_json::from_str(&measured).unwrap();
        let row = &measured["modes"][0];
        let t = &dry["tokens"];
        assert_eq!(row["listed"]["tokens"], t["listed"], "{exposure}");
        assert_eq!(row["all"]["tokens"], t["all_visible"], "{exposure}");
        assert_eq!(row["no_policy"]["tokens"], t["no_policy"], "{exposure}");
        assert_eq!(row["hidden"], t["hidden"], "{exposure}");
        assert_eq!(
            row["listed"]["tools"].as_u64().unwrap() as usize,
            dry["listed"].as_array().unwrap().len(),
            "{exposure}"
        );
        assert!(t["no_policy"].as_u64() > t["all_visible"].as_u64());
    }
    // Both say once what the figures are.
    let (_, human, _) = run_to_end(&file_args(&p, &s, &["--dry-run"]));
    assert_eq!(human.matches("characters / 4").count(), 1, "{human}");
    let (_, human, _) = policy_to_end(&[
        "measure",
        "--policy",
        p.to_str().unwrap(),
        "--registry",
        reg.to_str().unwrap(),
    ]);
    assert_eq!(human.matches("characters / 4").count(), 1, "{human}");
    assert!(
        human.contains("with no policy") || human.contains("no policy"),
        "{human}"
    );
}

#[test]
fn the_dry_run_names_its_context_the_hidden_tools_and_deprecated_ones() {
    let dir = temp_dir("dry-words");
    let policy = "NoDefer(fx__echo, fx__old_echo)\nwhen readonly {\n  Hide(fx__secret, fx__fail)\n}\nDefer(*)\n";
    let (p, s) = files(
        &dir,
        policy,
        &[("fx", fixture("echo,old_echo,secret,slow,fail", &[]))],
    );
    let (code, out, err) = run_to_end(&file_args(
        &p,
        &s,
        &["--dry-run", "--flag", "readonly", "--grant", "fx__*"],
    ));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("context: no mode, flags `readonly`, runtime grants `fx__*`\n"),
        "{out}"
    );
    assert!(
        out.contains("hidden (2):\n  fx__secret, fx__fail\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "note: `fx__old_echo` is listed, and its title or description says it is deprecated"
        ),
        "{out}"
    );
    assert!(!out.contains("`fx__echo` is listed"), "{out}");
    let (_, json, _) = run_to_end(&file_args(
        &p,
        &s,
        &["--dry-run", "--format", "json", "--flag", "readonly"],
    ));
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["hidden_tools"], json!(["fx__secret", "fx__fail"]));
    assert_eq!(v["context"]["flags"], json!(["readonly"]));
    assert_eq!(v["deprecated"], json!(["fx__old_echo"]));
}

/// Started by hand on a terminal (under `script`, which gives it one), the
/// gateway says what it is, and Ctrl-C on that terminal stops it.
#[cfg(unix)]
#[test]
fn a_gateway_on_a_terminal_says_what_it_is_and_ctrl_c_stops_it() {
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` command to give the gateway a terminal");
        return;
    }
    let dir = temp_dir("tty");
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("fx", fixture("echo", &[]))]);
    let command = format!(
        "'{}' gateway --policy '{}' --servers '{}'",
        policy_bin().display(),
        p.display(),
        s.display()
    );
    let mut script = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let mut out = script.stdout.take().unwrap();
    let sink = Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let until = Instant::now() + DEADLINE;
    while !seen.lock().unwrap().contains("Ctrl-C") && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = seen.lock().unwrap().clone();
    let stdin = script.stdin.as_mut().unwrap();
    // Ctrl-C, as the terminal sends it.
    let _ = stdin.write_all(b"\x03");
    let _ = stdin.flush();
    let mut ended = false;
    while Instant::now() < until {
        if let Ok(Some(_)) = script.try_wait() {
            ended = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if !ended {
        let _ = script.kill();
    }
    let _ = script.wait();
    assert!(
        text.contains(
            "note: serving MCP on standard input and output: an MCP client starts this command"
        ) && text.contains("press Ctrl-C to stop"),
        "{text}"
    );
    assert!(
        ended,
        "Ctrl-C did not stop the gateway: {}",
        seen.lock().unwrap()
    );
    assert_eq!(text.matches("serving MCP").count(), 1, "one line: {text}");
}
