//! What the command line and the servers file give is checked before
//! anything is served: a `--call-tool` that is not a valid MCP tool name, or
//! that is taken by the search tool or a server's tool, exits 2 with a
//! message that says why; `${VAR}` in a local server's entry is expanded,
//! and an unset one exits 2 naming the entry.

use crate::gateway::support::*;

const POLICY: &str = "guard fx__echo\nDefer(*)\n";

#[test]
fn a_call_tool_name_mcp_refuses_exits_before_serving() {
    let dir = temp_dir("call-tool-invalid");
    let (p, s) = files(&dir, POLICY, &[("fx", fixture("echo,slow", &[]))]);
    let long = "n".repeat(129);
    for (name, expected) in [
        (
            "",
            "`--call-tool` is not a valid MCP tool name: the name is empty",
        ),
        (
            "call\u{7}tool",
            "`--call-tool` is not a valid MCP tool name: `call\\u{7}tool` holds `\\u{7}`, which a tool name cannot carry",
        ),
        (
            "call tool",
            "`--call-tool` is not a valid MCP tool name: `call tool` holds ` `",
        ),
        ("call/tool", "holds `/`, which a tool name cannot carry"),
        (
            long.as_str(),
            "is 129 characters long, over the 128 a tool name may have",
        ),
    ] {
        for extra in [&[][..], &["--dry-run"][..]] {
            let mut args = file_args(&p, &s, extra);
            args.extend(["--call-tool", name]);
            let (code, out, err) = run_to_end(&args);
            assert_eq!(code, Some(2), "{name:?}: {err}");
            assert!(out.is_empty(), "{out}");
            assert!(err.contains(expected), "{name:?}: {err}");
            assert!(!err.contains("started with"), "nothing is started: {err}");
        }
    }
}

#[test]
fn a_call_tool_name_that_is_taken_exits_before_serving() {
    let dir = temp_dir("call-tool-taken");
    for (policy, name, expected) in [
        (
            POLICY,
            "tool_search",
            "error: `--call-tool` `tool_search` is the search tool's name: choose another",
        ),
        (
            "search find_tools\nDefer(*)\n",
            "find_tools",
            "error: `--call-tool` `find_tools` is the search tool's name: choose another",
        ),
        (
            POLICY,
            "fx__slow",
            "error: `--call-tool` `fx__slow` is the name of a tool of server `fx`: choose another",
        ),
    ] {
        let (p, s) = files(&dir, policy, &[("fx", fixture("echo,slow", &[]))]);
        for extra in [&[][..], &["--dry-run"][..]] {
            let mut args = file_args(&p, &s, extra);
            args.extend(["--call-tool", name]);
            let (code, out, err) = run_to_end(&args);
            assert_eq!(code, Some(2), "{name}: {err}");
            assert!(out.is_empty(), "{out}");
            assert!(err.contains(expected), "{name}: {err}");
        }
    }
    // A name of its own is served.
    let (p, s) = files(&dir, POLICY, &[("fx", fixture("echo,slow", &[]))]);
    let mut args = file_args(&p, &s, &["--dry-run"]);
    args.extend(["--call-tool", "reach.tool-1"]);
    let (code, out, err) = run_to_end(&args);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("fx__echo, tool_search, reach.tool-1"), "{out}");
}

/// `${VAR}` and `${VAR:-default}` in a local server's `command` and `env`
/// reach the process expanded, as clients' `.mcp.json` files are read; an
/// unset variable without a default exits 2 naming the entry.
#[test]
fn a_local_server_s_command_and_env_are_expanded() {
    let dir = temp_dir("expand");
    let entry = serde_json::json!({
        "command": "${FX_BIN}",
        "args": ["${FX_ARG:-unused}"],
        "env": {"FIXTURE_TOOLS": "${FX_TOOLS},${FX_MORE:-pid}"}
    });
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("fx", entry)]);
    let bin = fixture_bin();
    let env = [("FX_BIN", bin.to_str().unwrap()), ("FX_TOOLS", "echo,slow")];
    let mut g = Gateway::connect_env(&file_args(&p, &s, &[]), &env, "2025-11-25");
    assert_eq!(
        g.list(),
        ["fx__echo", "fx__slow", "fx__pid"],
        "{}",
        g.stderr()
    );
    drop(g);
    let (code, out, err) = run_to_end_env(&file_args(&p, &s, &[]), &env[..1]);
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("`mcpServers.fx.env.FIXTURE_TOOLS`: environment variable `FX_TOOLS` is not set\n  help: set it, or give a default: `${FX_TOOLS:-default}`"),
        "{err}"
    );
}

/// The search tool's name comes from the policy's `search` statement: one
/// MCP refuses exits 2 at start, and a reload that brings one keeps the
/// last good policy.
#[test]
fn a_search_tool_name_mcp_refuses_is_refused_at_start_and_on_reload() {
    let dir = temp_dir("search-name");
    let bad = "search \"find tools\"\nDefer(*)\n";
    let (p, s) = files(&dir, bad, &[("fx", fixture("echo,slow", &[]))]);
    let (code, out, err) = run_to_end(&file_args(&p, &s, &[]));
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("error: the search tool's name, from the policy's `search` statement, is not a valid MCP tool name: `find tools` holds ` `"),
        "{err}"
    );
    let (p, s) = files(&dir, POLICY, &[("fx", fixture("echo,slow", &[]))]);
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25");
    assert_eq!(g.list(), ["fx__echo", "tool_search", "call_tool"]);
    std::fs::write(&p, format!("search call_tool\n{POLICY}")).unwrap();
    assert!(
        g.wait_stderr("`--call-tool` `call_tool` is the search tool's name: choose another; keeping the last good policy", 1),
        "{}",
        g.stderr()
    );
    std::fs::write(&p, bad).unwrap();
    assert!(
        g.wait_stderr("is not a valid MCP tool name: `find tools` holds ` `, which a tool name cannot carry; keeping the last good policy", 1),
        "{}",
        g.stderr()
    );
    assert_eq!(g.list(), ["fx__echo", "tool_search", "call_tool"]);
}
