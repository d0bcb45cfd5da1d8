//! What the engine puts out (docs/registry.md): names providers accept, registry
//! fields and numbers kept, server tools passed through, names that read as
//! another refused or warned about, and human output that cannot drive the
//! reader's terminal.

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::{Value, json};
use toolpolicy::runtime::{Engine, Provider};
use toolpolicy::{Context, Policy, Registry, SkillList};

use crate::cli::support::policy;

const SHAPES: [Provider; 5] = [
    Provider::Generic,
    Provider::OpenAiChat,
    Provider::OpenAiResponses,
    Provider::Anthropic {
        native_deferral: false,
    },
    Provider::Anthropic {
        native_deferral: true,
    },
];

fn engine(policy: &str, registry: &Value) -> Engine {
    Engine::new(
        Policy::parse("p.policy", policy).unwrap(),
        Registry::from_json(&registry.to_string()).unwrap(),
        SkillList::default(),
    )
}

fn first_turn(e: &Engine, provider: Provider) -> Vec<Value> {
    let plan = e.session(Context::default()).unwrap().plan(e).unwrap();
    plan.provider_tools(provider)
}

/// The definition object of a rendered tool, whatever its envelope.
fn definition(tool: &Value) -> &Value {
    tool.get("function").unwrap_or(tool)
}

fn accepted_by_providers(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A file in a scratch folder of this test process, removed with the folder.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("toolpolicy-output-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const ODD_NAMES: [&str; 6] = [
    "fs.read",
    "a/b:c",
    "web search",
    "搜索",
    "naïve",
    "github__create_pull_request_review_comment_with_a_very_long_suffix",
];

fn odd_registry() -> Value {
    let mut tools = vec![json!({"name": "Read", "description": "Read a file."})];
    tools.extend(
        ODD_NAMES
            .iter()
            .map(|n| json!({"name": n, "description": "Does a thing."})),
    );
    Value::Array(tools)
}

#[test]
fn providers_get_names_they_accept_distinct_stable_and_mapped_back() {
    let e = engine("", &odd_registry());
    let snap = e.snapshot();
    for provider in &SHAPES[1..] {
        let tools = first_turn(&e, *provider);
        let sent: Vec<&str> = tools
            .iter()
            .map(|t| definition(t)["name"].as_str().unwrap())
            .collect();
        assert_eq!(sent.len(), 1 + ODD_NAMES.len());
        assert!(sent.iter().all(|n| accepted_by_providers(n)), "{sent:?}");
        assert_eq!(sent.iter().collect::<HashSet<_>>().len(), sent.len());
        let back: Vec<&str> = sent
            .iter()
            .map(|n| snap.provider_names().registry_name(n))
            .collect();
        let mut expected = vec!["Read"];
        expected.extend(ODD_NAMES);
        assert_eq!(back, expected);
    }
    // Generic runtimes take any name: the registry's own.
    let generic = first_turn(&e, Provider::Generic);
    assert_eq!(generic[1]["name"], "fs.read");
    // A tool's name does not depend on the rest of the registry.
    let mut more = odd_registry();
    more.as_array_mut()
        .unwrap()
        .insert(0, json!({"name": "x.y", "description": "Another."}));
    let other = engine("", &more);
    assert_eq!(
        other.snapshot().provider_names().sent("a/b:c"),
        snap.provider_names().sent("a/b:c")
    );
}

#[test]
fn check_registry_warns_about_names_providers_reject() {
    let dir = Scratch::new("provider-names");
    let registry = dir.file("tools.json", &odd_registry().to_string());
    let file = dir.file("p.policy", "Hide(Read)\n");
    let out = policy(&["check", &file, "--registry", &registry, "--format", "json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let found: Vec<&str> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "PL116")
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (1..=ODD_NAMES.len())
        .map(|i| format!("tools[{i}].name"))
        .collect();
    assert_eq!(found, expected);
    assert_eq!(doc["warnings"], ODD_NAMES.len());
    let out = policy(&["check", &file, "--registry", &registry, "--deny-warnings"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("warning[PL116]"));
}

#[test]
fn unknown_fields_and_numbers_are_kept_in_every_shape() {
    // Numbers as written: past u64, and a decimal with a trailing zero.
    let text = r#"[
        {"name": "Read", "description": "Read a file.", "type": "custom",
         "input_schema": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 100000000000000000000, "multipleOf": 0.10}}},
         "cache_control": {"type": "ephemeral"}, "strict": true, "annotations": {"readOnlyHint": true}},
        {"type": "function", "function": {"name": "Write", "description": "Write a file.",
         "parameters": {"type": "object"}, "strict": true}}
    ]"#;
    let e = Engine::new(
        Policy::parse("p", "").unwrap(),
        Registry::from_json(text).unwrap(),
        SkillList::default(),
    );
    for provider in SHAPES {
        let tools = first_turn(&e, provider);
        let read = definition(&tools[0]);
        assert_eq!(read["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(read["strict"], true);
        assert_eq!(read["annotations"], json!({"readOnlyHint": true}));
        let written = serde_json::to_string(read).unwrap();
        assert!(
            written.contains(r#""maximum":100000000000000000000"#),
            "{written}"
        );
        assert!(written.contains(r#""multipleOf":0.10"#), "{written}");
        assert_eq!(definition(&tools[1])["strict"], true, "{provider:?}");
    }
}

#[test]
fn server_tools_pass_through_untouched() {
    let server = [
        json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5,
               "allowed_domains": ["example.com"]}),
        json!({"type": "text_editor_20250124", "name": "str_replace_editor"}),
        json!({"type": "code_execution_20250522", "name": "code_execution",
               "cache_control": {"type": "ephemeral"}}),
    ];
    let e = engine("", &Value::Array(server.to_vec()));
    for provider in SHAPES {
        assert_eq!(first_turn(&e, provider), server, "{provider:?}");
    }
}

#[test]
fn names_that_would_read_as_another_are_refused_by_entry() {
    for bad in [
        "Read ",
        " Read",
        "Re\u{200b}ad",
        "Re\u{202e}ad",
        "Re\u{1b}ad",
        "Re\nad",
    ] {
        let e = Registry::from_json(&json!([{"name": "Write"}, {"name": bad}]).to_string())
            .unwrap_err();
        assert_eq!(e.path, "tools[1].name", "{bad:?}");
        let shows_raw = e.message.contains(['\u{200b}', '\u{202e}', '\u{1b}', '\n']);
        assert!(
            !shows_raw,
            "the message shows the name escaped: {}",
            e.message
        );
        let e =
            SkillList::from_json(&json!([{"name": "a"}, {"name": bad}]).to_string()).unwrap_err();
        assert_eq!(e.path, "skills[1].name", "{bad:?}");
    }
}

#[test]
fn look_alike_names_load_with_a_warning_naming_both() {
    let names = ["Read", "read", "Ｒead", "café", "cafe\u{301}", "Write"];
    let mut tools: Vec<Value> = names
        .iter()
        .enumerate()
        .map(|(i, n)| json!({"name": n, "description": format!("Tool number {i}.")}))
        .collect();
    tools.push(json!({"name": "ToolSearch", "description": "Find tools."}));
    let registry = Registry::from_json(&Value::Array(tools.clone()).to_string()).unwrap();
    let paths: Vec<&str> = registry
        .warnings()
        .iter()
        .map(|w| w.path.as_str())
        .collect();
    assert_eq!(paths, ["tools[1].name", "tools[2].name", "tools[4].name"]);
    assert!(registry.warnings()[2].message.contains("`tools[3].name`"));
    // Every name the catalog shows loads the tool whose summary it shows.
    let e = engine(
        "search ToolSearch\nDefer(*)\n",
        &Value::Array(tools.clone()),
    );
    let plan = e.session(Context::default()).unwrap().plan(&e).unwrap();
    let lines: Vec<&str> = plan.catalog().lines().skip(1).collect();
    assert_eq!(lines.len(), names.len());
    for line in lines {
        let (name, summary) = line[2..].split_once(": ").unwrap();
        let tool = registry.get(name).expect("the catalog shows a real name");
        assert_eq!(tool.description, summary);
    }
    // Commands that load the registry say so.
    let dir = Scratch::new("look-alike");
    let file = dir.file("tools.json", &Value::Array(tools).to_string());
    let policy_file = dir.file("p.policy", "search ToolSearch\nDefer(*)\n");
    let out = policy(&["plan", "--policy", &policy_file, "--registry", &file]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("warning[PL115]").count(), 3, "{stderr}");
    assert!(stderr.contains("`tools[2].name`: `Ｒead` reads like `Read` (`tools[0].name`)"));
}

/// Output for people with escape sequences written out, never sent raw.
fn assert_escaped(out: &std::process::Output) {
    for stream in [&out.stdout, &out.stderr] {
        let s = text(stream);
        assert!(!s.contains('\u{1b}') && !s.contains('\u{7}'), "{s:?}");
    }
}

#[test]
fn human_output_never_sends_control_sequences_to_the_terminal() {
    let dir = Scratch::new("escape");
    let title = "\u{1b}]0;owned\u{7}\u{1b}[2J";
    let bad = dir.file(
        "bad.policy",
        &format!("Defr(x) # {title}\nHide(\"a{title}\")\n"),
    );
    let out = policy(&["check", &bad]);
    assert_escaped(&out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("# \\u{1b}]0;owned\\u{7}\\u{1b}[2J"),
        "{stdout}"
    );
    // The caret stays under `Defr`.
    assert!(
        stdout.contains("1 | Defr(x)") && stdout.contains("  | ^^^^\n"),
        "{stdout}"
    );
    assert_escaped(&policy(&["check", &bad, "--format", "plain"]));

    let good = dir.file("p.policy", "search ToolSearch\nDefer(*)\n");
    let registry = dir.file(
        "tools.json",
        &json!([
            {"name": "ToolSearch", "description": "Find tools."},
            {"name": "Read", "description": format!("Reads. {title}")}
        ])
        .to_string(),
    );
    let engine_args = ["--policy", &good, "--registry", &registry];
    let item = format!("x{title}");
    let runs: [Vec<&str>; 4] = [
        [&["explain", &item][..], &engine_args[..2]].concat(),
        [&["plan"][..], &engine_args].concat(),
        [&["search", &item, "--names", &item][..], &engine_args].concat(),
        [&["plan", "--tools", &item][..], &engine_args].concat(),
    ];
    for args in runs {
        let out = policy(&args);
        assert_escaped(&out);
    }
    let scenario = dir.file(
        "s.json",
        &json!({"steps": [{"call": {"tool": item, "status": "ok"}}, {"search": {"query": item}}]})
            .to_string(),
    );
    let out = policy(&[&["replay", &scenario][..], &engine_args].concat());
    assert!(
        text(&out.stdout).contains("\\u{1b}"),
        "{}",
        text(&out.stdout)
    );
    assert_escaped(&out);
}
