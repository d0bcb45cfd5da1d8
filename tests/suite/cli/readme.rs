//! The README's commands run as written, and the output it quotes beside a
//! command is what that command prints: a newcomer copies both.
//!
//! Every `cargo run -- ...` or `policy ...` line of a `sh` block is run from
//! the project's root, except `gateway` and `registry`, which start MCP
//! servers through `npx` (the gateway's own tests cover them). A `text` block
//! that follows a `sh` block (prose between is fine, another block is not)
//! quotes the output of that block's last command that runs: each of its
//! lines, but `...`, must be a line of what the command prints.

use std::process::Output;

use crate::cli::support::{policy, root};

/// A fenced block: its language tag and its lines, indentation removed.
struct Block {
    lang: String,
    text: String,
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

fn blocks(doc: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(String, usize, String)> = None;
    for line in doc.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut open {
            None => {
                if let Some(tag) = trimmed.strip_prefix("```") {
                    open = Some((tag.trim().to_string(), indent, String::new()));
                }
            }
            Some((lang, at, text)) => {
                if trimmed.starts_with("```") {
                    out.push(Block {
                        lang: std::mem::take(lang),
                        text: std::mem::take(text),
                    });
                    open = None;
                } else {
                    text.push_str(line.get(*at..).unwrap_or(trimmed));
                    text.push('\n');
                }
            }
        }
    }
    out
}

/// The shell lines of a block, `\` continuations joined, comments cut.
fn shell_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = match line.find(" #") {
            Some(at) => &line[..at],
            None => line,
        };
        let line = line.trim();
        if let Some(head) = line.strip_suffix('\\') {
            current.push_str(head.trim_end());
            current.push(' ');
        } else {
            current.push_str(line);
            if !current.trim().is_empty() {
                out.push(current.trim().to_string());
            }
            current.clear();
        }
    }
    out
}

/// Words as the shell splits them; double quotes group.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(word);
    }
    out
}

/// The `policy` arguments of a line, when the line runs `policy`.
fn policy_args(line: &str) -> Option<Vec<String>> {
    let words = words(line);
    match words.as_slice() {
        // `cargo run [cargo's own flags] -- ARGS`
        [cargo, run, rest @ ..] if cargo == "cargo" && run == "run" => {
            let dashes = rest.iter().position(|w| w == "--")?;
            Some(rest[dashes + 1..].to_vec())
        }
        [policy, rest @ ..] if policy == "policy" => Some(rest.to_vec()),
        _ => None,
    }
}

/// Whether the test runs the command: not those that start servers, nor
/// (see `readme_check_against_the_registry_passes`) a `--deny-warnings` check.
fn runs(args: &[String]) -> bool {
    let starts_servers = matches!(
        args.first().map(String::as_str),
        Some("gateway" | "registry")
    );
    !starts_servers && !args.iter().any(|a| a == "--deny-warnings")
}

fn run(args: &[String]) -> Output {
    let args: Vec<String> = args.iter().map(|a| scratch_log(a)).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    policy(&args)
}

/// A log the README's commands write and read (`audit.jsonl`) goes to the
/// temporary folder, never into the checkout; the same name maps to the
/// same file within one test process.
fn scratch_log(arg: &str) -> String {
    if !arg.ends_with(".jsonl") || root().join(arg).exists() {
        return arg.to_string();
    }
    let path = std::env::temp_dir().join(format!("toolpolicy-readme-{}-{arg}", std::process::id()));
    path.display().to_string()
}

fn shown(out: &Output) -> String {
    format!(
        "--- stdout ---\n{}--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The exit a README command promises: `check policies/invalid/` shows what
/// errors look like, so it fails; everything else succeeds.
fn expected_exit(args: &[String]) -> i32 {
    if args.iter().any(|a| a.starts_with("policies/invalid")) {
        1
    } else {
        0
    }
}

/// Each quoted line, but `...`, is a line of the output (trailing spaces aside).
fn assert_quoted(args: &[String], quote: &str, out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let printed: Vec<&str> = stdout.lines().map(str::trim_end).collect();
    for line in quote.lines().map(str::trim_end) {
        if line.is_empty() || line == "..." {
            continue;
        }
        assert!(
            printed.contains(&line),
            "the README quotes `{line}` for `policy {}`, which printed:\n{}",
            args.join(" "),
            shown(out)
        );
    }
}

#[test]
fn readme_commands_run_and_print_what_it_quotes() {
    let doc = readme();
    let blocks = blocks(&doc);
    let mut ran = 0;
    let mut quoted = 0;
    // The last command that runs of the latest `sh` block, with its output,
    // until another kind of block comes.
    let mut last: Option<(Vec<String>, Output)> = None;
    for block in &blocks {
        match block.lang.as_str() {
            "sh" => {
                last = None;
                for line in shell_lines(&block.text) {
                    let Some(args) = policy_args(&line) else {
                        continue;
                    };
                    if !runs(&args) {
                        continue;
                    }
                    let out = run(&args);
                    assert_eq!(
                        out.status.code(),
                        Some(expected_exit(&args)),
                        "README: `{line}`\n{}",
                        shown(&out)
                    );
                    ran += 1;
                    last = Some((args, out));
                }
            }
            "text" => {
                if let Some((args, out)) = last.take() {
                    assert_quoted(&args, &block.text, &out);
                    quoted += 1;
                }
            }
            _ => last = None,
        }
    }
    // The quick start's `measure`, the path's `explain`, `measure` and
    // `test`, and the tour's commands at least.
    assert!(ran >= 9, "only {ran} README commands found to run");
    assert!(quoted >= 3, "only {quoted} quoted outputs found to compare");
}

/// The quick start's first command is `measure` on a registry the
/// repository ships, and the figures beside it are that command's.
#[test]
fn the_first_command_shows_the_savings_on_shipped_files() {
    let doc = readme();
    let blocks = blocks(&doc);
    let first = blocks.iter().find(|b| b.lang == "sh").expect("a sh block");
    let lines = shell_lines(&first.text);
    assert_eq!(
        lines.len(),
        2,
        "the quick start has two commands: {lines:?}"
    );
    assert_eq!(lines[1], "cargo test");
    let args = policy_args(&lines[0]).expect("the first command runs `policy`");
    assert_eq!(args[0], "measure");
    for (i, a) in args.iter().enumerate() {
        if i > 0 && (args[i - 1] == "--policy" || args[i - 1] == "--registry") {
            assert!(root().join(a).is_file(), "`{a}` is not in the repository");
        }
    }
}

/// The error the README quotes for a gateway without `--mode`, and its exit
/// (2, shown by a client as a failure to connect), before any server starts.
#[test]
fn a_gateway_without_a_mode_fails_as_the_readme_says() {
    let doc = readme();
    let out = policy(&[
        "gateway",
        "--policy",
        "examples/gateway/modes.policy",
        "--servers",
        "examples/gateway/servers.json",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        doc.contains(&format!("```text\n{first}\n```")),
        "the README does not quote the gateway's error `{first}`"
    );
}

/// `check --registry --deny-warnings` on the README's policy passes, as the
/// README shows. It needs the lints to know that the gateway supplies the
/// search tool (PL101 and PL105 on `search tool_search` are false there).
#[test]
fn readme_check_against_the_registry_passes() {
    let doc = readme();
    let blocks = blocks(&doc);
    let mut checked = 0;
    for (i, block) in blocks.iter().enumerate() {
        if block.lang != "sh" {
            continue;
        }
        for line in shell_lines(&block.text) {
            let Some(args) = policy_args(&line) else {
                continue;
            };
            if !args.iter().any(|a| a == "--deny-warnings") {
                continue;
            }
            let out = run(&args);
            assert_eq!(
                out.status.code(),
                Some(0),
                "README: `{line}`\n{}",
                shown(&out)
            );
            if let Some(next) = blocks.get(i + 1).filter(|b| b.lang == "text") {
                assert_quoted(&args, &next.text, &out);
            }
            checked += 1;
        }
    }
    assert!(checked >= 1, "no `--deny-warnings` check in the README");
}

#[test]
fn shell_lines_join_continuations_and_cut_comments() {
    let text = "policy a \\\n    b   # why\n\ncargo test\n";
    assert_eq!(shell_lines(text), vec!["policy a b", "cargo test"]);
    assert_eq!(
        words(r#"search "open a page" --mode agent"#),
        vec!["search", "open a page", "--mode", "agent"]
    );
}

/// The `gateway` arguments of each client entry of a config, by entry name.
fn entry_modes(entries: &serde_json::Map<String, serde_json::Value>) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|(name, entry)| {
            let args: Vec<&str> = entry["args"]
                .as_array()
                .unwrap_or_else(|| panic!("entry `{name}` has no args"))
                .iter()
                .filter_map(serde_json::Value::as_str)
                .collect();
            assert_eq!(args.first(), Some(&"gateway"), "entry `{name}`");
            let at = args
                .iter()
                .position(|a| *a == "--mode")
                .unwrap_or_else(|| panic!("entry `{name}` passes no `--mode`"));
            let policy = args
                .iter()
                .position(|a| *a == "--policy")
                .and_then(|i| args.get(i + 1))
                .unwrap_or_else(|| panic!("entry `{name}` passes no `--policy`"));
            assert!(
                policy.ends_with("/modes.policy"),
                "entry `{name}` runs `{policy}`, not the policy the section copies"
            );
            (name.clone(), args[at + 1].to_string())
        })
        .collect()
}

/// The client entries of "Modes and flags behind the gateway" are one per
/// mode of the policy they run, each passing its own `--mode`: the section's
/// Claude Code `claude mcp add` lines and `.mcp.json`, and Codex's TOML.
#[test]
fn the_client_entries_give_every_mode_of_the_policy_its_own_entry() {
    let doc = readme();
    let start = doc
        .find("## Modes and flags behind the gateway")
        .expect("the section");
    let end = doc[start..]
        .find("\n## A short tour")
        .map_or(doc.len(), |e| start + e);
    let section = blocks(&doc[start..end]);
    let text =
        std::fs::read_to_string(root().join("examples/gateway/modes.policy")).expect("policy");
    let policy = toolpolicy::Policy::parse("modes.policy", &text).expect("the policy loads");
    let mut declared = policy.modes.clone();
    declared.sort();

    let json = section
        .iter()
        .find(|b| b.lang == "json")
        .expect("a .mcp.json");
    let config: serde_json::Value = serde_json::from_str(&json.text).expect(".mcp.json parses");
    let mut modes: Vec<String> = entry_modes(config["mcpServers"].as_object().expect("mcpServers"))
        .into_iter()
        .map(|(_, m)| m)
        .collect();
    modes.sort();
    assert_eq!(modes, declared, ".mcp.json");

    let toml_block = section
        .iter()
        .find(|b| b.lang == "toml")
        .expect("a Codex block");
    let config: toml::Value = toml::from_str(&toml_block.text).expect("the TOML parses");
    let as_json = serde_json::to_value(&config["mcp_servers"]).expect("as JSON");
    let mut modes: Vec<String> = entry_modes(as_json.as_object().expect("mcp_servers"))
        .into_iter()
        .map(|(_, m)| m)
        .collect();
    modes.sort();
    assert_eq!(modes, declared, "Codex's config.toml");

    let sh = section
        .iter()
        .filter(|b| b.lang == "sh")
        .flat_map(|b| shell_lines(&b.text))
        .filter(|l| l.starts_with("claude mcp add"))
        .collect::<Vec<_>>();
    let mut modes: Vec<String> = sh
        .iter()
        .map(|line| {
            let w = words(line);
            let at = w
                .iter()
                .position(|a| a == "--mode")
                .expect("`--mode` in the line");
            w[at + 1].clone()
        })
        .collect();
    modes.sort();
    assert_eq!(modes, declared, "the `claude mcp add` lines");
}

/// The policy the path shows is the bundled file its commands run, comments
/// of the file's head aside.
#[test]
fn the_policy_the_readme_shows_is_the_one_its_commands_run() {
    let doc = readme();
    let at = doc.find("### 2. Write a policy").expect("the step");
    let shown = blocks(&doc[at..])
        .into_iter()
        .find(|b| b.lang.is_empty())
        .expect("the policy's block");
    let file =
        std::fs::read_to_string(root().join("examples/gateway/modes.policy")).expect("policy");
    assert!(
        file.ends_with(&shown.text),
        "README's policy differs from examples/gateway/modes.policy"
    );
}
