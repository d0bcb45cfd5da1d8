//! The examples of the language page are true: each policy it shows loads,
//! and what it shows `policy fmt` and `policy check` printing is what they
//! print.

use toolpolicy::Policy;

use crate::cli::support::{policy, policy_with_stdin, root};

fn page() -> String {
    std::fs::read_to_string(root().join("docs/language.md")).expect("docs/language.md")
}

/// The fenced blocks of a kind, in order.
fn blocks(doc: &str, kind: &str) -> Vec<String> {
    let fence = format!("```{kind}\n");
    doc.match_indices(&fence)
        .map(|(at, _)| {
            let start = at + fence.len();
            let len = doc[start..].find("```").expect("a closed block");
            doc[start..start + len].to_string()
        })
        .collect()
}

#[test]
fn every_policy_the_language_page_shows_loads() {
    let examples = blocks(&page(), "policy");
    assert!(examples.len() >= 3, "only {} policy blocks", examples.len());
    for text in examples {
        if let Err(e) = Policy::parse("example.policy", &text) {
            panic!("docs/language.md shows a policy that does not load:\n{text}\n{e:?}");
        }
    }
}

/// `$ printf '...' | policy fmt -` and `$ policy check FILE` blocks: the
/// command's output is the rest of the block.
#[test]
fn the_commands_the_language_page_shows_print_what_it_says() {
    let mut seen = 0;
    for block in blocks(&page(), "text") {
        let (command, shown) = block.split_once('\n').expect("a command line");
        let out = if let Some(rest) = command.strip_prefix("$ printf '") {
            let (input, pipe) = rest.split_once("' | ").expect("printf '...' | policy ...");
            let args: Vec<&str> = pipe.split_whitespace().skip(1).collect();
            policy_with_stdin(&args, input.replace("\\n", "\n").as_bytes())
        } else if let Some(rest) = command.strip_prefix("$ policy ") {
            let args: Vec<&str> = rest.split_whitespace().collect();
            policy(&args)
        } else {
            continue;
        };
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            printed.starts_with(shown),
            "docs/language.md shows for `{command}`:\n{shown}\nbut it prints:\n{printed}"
        );
        seen += 1;
    }
    assert!(seen >= 2, "only {seen} commands found");
}

fn doc(name: &str) -> String {
    std::fs::read_to_string(root().join("docs").join(name)).expect("the page")
}

/// The registry page's example loads, every shape in it, with the facts the
/// page gives for each field; its skill list too.
#[test]
fn the_registry_page_examples_load() {
    let json = blocks(&doc("registry.md"), "json");
    let registry = toolpolicy::Registry::from_json(&json[0]).expect("the registry example loads");
    let names: Vec<&str> = registry.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["read", "github__create_issue", "web_fetch", "notebook_edit"]
    );
    let fetch = registry.get("web_fetch").expect("the nested OpenAI shape");
    assert_eq!(fetch.source.as_deref(), Some("builtin"));
    assert!(registry.get("notebook_edit").expect("hint").defer_loading);
    let issue = registry.get("github__create_issue").expect("the MCP shape");
    assert!(issue.extra.contains_key("annotations"));
    let skills = toolpolicy::SkillList::from_json(&json[1]).expect("the skill list loads");
    assert!(!skills.get("release-notes").expect("listed").model_invocable);
    assert_eq!(
        skills.by_key("review").map(|s| s.name.as_str()),
        Some("code-review")
    );
}

/// The replay page's scenario is the bundled one its command runs.
#[test]
fn the_replay_page_shows_the_bundled_scenario() {
    let json = blocks(&doc("replay.md"), "json");
    let file = std::fs::read_to_string(root().join("examples/gateway/review-session.json"))
        .expect("the scenario");
    assert_eq!(json[0], file);
    let out = policy(&["replay", "examples/gateway/review-session.json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A heading's anchor as GitHub makes it: lowercase, punctuation dropped,
/// spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Text outside fenced blocks.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Every relative link of the README and the docs pages leads to a file of
/// the repository, and a `#fragment` to a heading of that page: the pages
/// were moved about, and a newcomer follows the links.
#[test]
fn every_link_of_the_readme_and_docs_resolves() {
    let mut pages = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).expect("docs/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let anchors = |path: &std::path::Path| -> Vec<String> {
        let text = prose(&std::fs::read_to_string(path).expect("page"));
        text.lines()
            .filter_map(|l| l.strip_prefix('#'))
            .map(|l| anchor(l.trim_start_matches('#')))
            .collect()
    };
    let mut links = 0;
    for page in &pages {
        let text = prose(&std::fs::read_to_string(page).expect("page"));
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let link = &rest[..end];
            if link.starts_with("http") || link.contains(' ') {
                continue;
            }
            let (path, fragment) = link.split_once('#').unwrap_or((link, ""));
            let target = if path.is_empty() {
                page.clone()
            } else {
                page.parent().expect("folder").join(path)
            };
            assert!(
                target.exists(),
                "{}: `{link}` leads to no file",
                page.display()
            );
            if !fragment.is_empty() && (path.is_empty() || path.ends_with(".md")) {
                assert!(
                    anchors(&target).iter().any(|a| a == fragment),
                    "{}: `{link}` names no heading of {}",
                    page.display(),
                    target.display()
                );
            }
            links += 1;
        }
    }
    assert!(links > 50, "only {links} links found");
}

/// The `$ policy ...` commands a page shows in its text blocks, each with
/// its arguments and the lines shown after it.
fn shown_commands(page: &str) -> Vec<(String, String, String)> {
    blocks(page, "text")
        .iter()
        .filter_map(|block| {
            let (command, shown) = block.split_once('\n')?;
            let rest = command.strip_prefix("$ policy ")?;
            Some((command.to_string(), rest.to_string(), shown.to_string()))
        })
        .collect()
}

/// The hints page: its policies load, and each command it shows prints what
/// the page says (up to a `  ...` line, then the lines after it, in order).
#[test]
fn the_hints_page_examples_are_true() {
    let page = doc("hints.md");
    let policies = blocks(&page, "policy");
    assert!(!policies.is_empty());
    for text in policies {
        if let Err(e) = Policy::parse("example.policy", &text) {
            panic!("docs/hints.md shows a policy that does not load:\n{text}\n{e:?}");
        }
    }
    let mut seen = 0;
    for (command, rest, shown) in shown_commands(&page) {
        let (command, rest, shown) = (command.as_str(), rest.as_str(), shown.as_str());
        let out = policy(&rest.split_whitespace().collect::<Vec<_>>());
        assert!(out.status.success(), "`{command}` fails");
        let printed = String::from_utf8_lossy(&out.stdout);
        let (head, tail) = shown.split_once("  ...\n").unwrap_or((shown, ""));
        assert!(
            printed.starts_with(head),
            "docs/hints.md shows for `{command}`:\n{head}\nbut it prints:\n{printed}"
        );
        let mut from = head.len();
        for line in tail.lines() {
            let at = printed[from..].find(line).unwrap_or_else(|| {
                panic!("`{command}` does not print, in order:\n{line}\n{printed}")
            });
            from += at + line.len();
        }
        seen += 1;
    }
    assert!(seen >= 2, "only {seen} commands found");
}

/// The locks page: its policies load (`lock` recorded, not read), and each
/// `$ policy ...` it shows prints the lines the page quotes (`...` skips).
#[test]
fn the_locks_page_examples_are_true() {
    let page = doc("locks.md");
    for text in blocks(&page, "policy") {
        let p = Policy::parse("example.policy", &text).unwrap_or_else(|e| {
            panic!("docs/locks.md shows a policy that does not load:\n{text}\n{e:?}")
        });
        assert!(p.lock.is_some(), "{text}");
    }
    let mut seen = 0;
    for (command, rest, shown) in shown_commands(&page) {
        let (command, rest, shown) = (command.as_str(), rest.as_str(), shown.as_str());
        let out = policy(&rest.split_whitespace().collect::<Vec<_>>());
        // `--check` on the changed registry fails, as the page says.
        let expected = if rest.contains("--check") { 1 } else { 0 };
        assert_eq!(out.status.code(), Some(expected), "`{command}`");
        let printed = String::from_utf8_lossy(&out.stdout);
        for line in shown.lines().filter(|l| l.trim() != "...") {
            assert!(
                printed.lines().any(|p| p == line),
                "docs/locks.md shows for `{command}`:\n{line}\nbut it prints:\n{printed}"
            );
        }
        seen += 1;
    }
    assert_eq!(seen, 2);
}

/// The HTTP client entries of the README's "Put your client behind it" are
/// the ones docs/gateway.md gives (the client tests run the README's), and
/// Codex's parses with the URL and token variable the gateway expects.
#[test]
fn the_readme_http_entries_are_the_gateway_page_s() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let start = readme
        .find("### 5. Put your client behind it")
        .expect("the step");
    let end = start + readme[start..].find("\n## ").expect("the next section");
    let step = &readme[start..end];
    let url = "https://mcp.example.com/mcp";
    let sh: Vec<String> = blocks(step, "sh")
        .into_iter()
        .filter(|b| b.contains(url))
        .collect();
    let toml_blocks: Vec<String> = blocks(step, "toml")
        .into_iter()
        .filter(|b| b.contains(url))
        .collect();
    assert_eq!(sh.len(), 1, "one Claude Code HTTP line in the step");
    assert_eq!(toml_blocks.len(), 1, "one Codex HTTP block in the step");
    assert!(
        sh[0].contains("--transport http") && sh[0].contains("Authorization: Bearer $"),
        "{}",
        sh[0]
    );
    let config: toml::Value = toml::from_str(&toml_blocks[0]).expect("the TOML parses");
    let entry = &config["mcp_servers"]["tools"];
    assert_eq!(entry["url"].as_str(), Some(url));
    assert!(entry["bearer_token_env_var"].as_str().is_some());

    let gateway = doc("gateway.md");
    let at = gateway
        .find("### An HTTP entry in a client")
        .expect("the gateway page's section");
    let section = &gateway[at..];
    assert_eq!(
        blocks(section, "sh").first(),
        Some(&sh[0]),
        "Claude Code's line"
    );
    assert_eq!(
        blocks(section, "toml").first(),
        Some(&toml_blocks[0]),
        "Codex's block"
    );
}
