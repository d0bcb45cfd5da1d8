//! The gateway's own tool names are checked before anything is served: a
//! `--call-tool` that is not a valid MCP tool name, or that is taken by the
//! search tool or a server's tool, exits 2 with a message that says why.

use super::gateway_support::*;

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
