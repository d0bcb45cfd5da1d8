//! The examples of the language page are true: each policy it shows loads,
//! and what it shows `policy fmt` and `policy check` printing is what they
//! print.

use toolpolicy::Policy;

use super::cli::{policy, policy_with_stdin, root};

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
