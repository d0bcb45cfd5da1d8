//! `policy lsp` spoken to as an editor does: JSON-RPC with `Content-Length`
//! framing on the process's standard input and output. Every read has a
//! timeout, so a server that stalls fails the test instead of hanging it.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long any answer may take; generous for a loaded CI machine, and
/// still far shorter than a hang.
const TIMEOUT: Duration = Duration::from_secs(20);

struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    /// Messages read while waiting for another.
    queued: VecDeque<Value>,
    next_id: u64,
}

impl Client {
    fn start(root: &Path, options: Value) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_policy"))
            .arg("lsp")
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start policy lsp");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, incoming) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            while let Some(msg) = read_message(&mut r) {
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        let mut c = Client {
            child,
            stdin,
            incoming,
            queued: VecDeque::new(),
            next_id: 1,
        };
        let init = c.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": uri(root),
                "capabilities": {},
                "initializationOptions": options,
            }),
        );
        assert!(
            init["result"]["capabilities"]["hoverProvider"] == json!(true),
            "{init}"
        );
        c.notify("initialized", json!({}));
        c
    }

    fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its answer.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait(&format!("the answer to `{method}`"), |m| {
            m["id"] == json!(id)
        })
    }

    /// The first message (read before or now) that `want` accepts.
    fn wait(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.queued.iter().position(&want) {
            return self.queued.remove(i).unwrap();
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.incoming.recv_timeout(left) {
                Ok(m) if want(&m) => return m,
                Ok(m) => self.queued.push_back(m),
                Err(_) => panic!(
                    "no {what} within {TIMEOUT:?}; read meanwhile: {:?}",
                    self.queued
                ),
            }
        }
    }

    /// The next diagnostics published for `uri` at `version`.
    fn diagnostics(&mut self, uri: &str, version: i64) -> Vec<Value> {
        let m = self.wait(&format!("diagnostics of version {version}"), |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"] == json!(version)
        });
        m["params"]["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "policy", "version": 1, "text": text}}),
        );
    }

    fn change(&mut self, uri: &str, version: i64, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }

    fn at(&mut self, method: &str, uri: &str, line: usize, character: usize) -> Value {
        self.request(
            method,
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}),
        )
    }

    /// Shutdown and exit: the process ends, with success.
    fn stop(mut self) {
        let r = self.request("shutdown", Value::Null);
        assert!(r.get("error").is_none(), "{r}");
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "policy lsp exited with {status}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "policy lsp did not exit after `exit`"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_message(r: &mut impl BufRead) -> Option<Value> {
    let mut len = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            len = n.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; len?];
    r.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// A fresh folder for one test.
fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("policy-lsp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const REGISTRY: &str = r#"[
  {"name": "Read", "description": "Read a file", "source": "builtin",
   "annotations": {"readOnlyHint": true}},
  {"name": "Bash", "description": "Run a command", "source": "builtin"},
  {"name": "mcp__github__create_issue", "description": "Open an issue", "source": "mcp:github"}
]"#;

/// A folder with a registry and a settings file that chooses mode `agent`.
fn project(name: &str) -> PathBuf {
    let dir = folder(name);
    std::fs::write(dir.join("tools.json"), REGISTRY).unwrap();
    std::fs::write(
        dir.join(".policy-lsp.toml"),
        "registry = \"tools.json\"\nmode = \"agent\"\n",
    )
    .unwrap();
    dir
}

/// `text` with one protocol edit applied (ASCII text: columns are bytes).
fn apply(text: &str, edit: &Value) -> String {
    let offset = |p: &Value| {
        let line = p["line"].as_u64().unwrap() as usize;
        let col = p["character"].as_u64().unwrap() as usize;
        let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        (start + col).min(text.len())
    };
    let (a, b) = (
        offset(&edit["range"]["start"]),
        offset(&edit["range"]["end"]),
    );
    format!(
        "{}{}{}",
        &text[..a],
        edit["newText"].as_str().unwrap(),
        &text[b..]
    )
}

fn codes(diags: &[Value]) -> Vec<&str> {
    diags.iter().filter_map(|d| d["code"].as_str()).collect()
}

#[test]
fn a_broken_policy_gets_check_s_diagnostics_with_help_and_fixes() {
    let dir = folder("broken");
    let path = dir.join("p.policy");
    let text = "mode agent {\n  Defr(Bash)\n  defer_loadin = false\n}\n";
    std::fs::write(&path, text).unwrap();
    let u = uri(&path);
    let mut c = Client::start(&dir, Value::Null);
    c.open(&u, text);
    let diags = c.diagnostics(&u, 1);
    assert_eq!(codes(&diags), ["PL004", "PL005"], "{diags:?}");
    let setting = &diags[1];
    assert_eq!(setting["severity"], 1);
    assert_eq!(
        setting["range"]["start"],
        json!({"line": 2, "character": 2})
    );
    assert!(
        setting["message"]
            .as_str()
            .unwrap()
            .contains("help: did you mean `defer_loading`"),
        "{setting}"
    );
    assert_eq!(setting["data"]["fixes"][0]["text"], "defer_loading");
    // The same findings as `policy check --format json`.
    let out = Command::new(env!("CARGO_BIN_EXE_policy"))
        .args(["check", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    let check: Value = serde_json::from_slice(&out.stdout).unwrap();
    let check_codes: Vec<&str> = check["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert_eq!(check_codes, codes(&diags));
    c.stop();
}

#[test]
fn hover_explains_a_tool_in_the_settings_context() {
    let dir = project("hover");
    let path = dir.join("p.policy");
    let text = "search ToolSearch\nmode agent {\n  NoDefer(Read)\n  Defer(*)\n  Hide(hint:destructive)\n}\nmode chat {\n  defer_loading = false\n}\n";
    std::fs::write(&path, text).unwrap();
    let u = uri(&path);
    let mut c = Client::start(&dir, Value::Null);
    c.open(&u, text);
    let md = |r: &Value| {
        r["result"]["contents"]["value"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    // `Read` is read-only: `Hide(hint:destructive)` spares it, `NoDefer` decides.
    let read = md(&c.at("textDocument/hover", &u, 2, 11));
    assert!(read.contains("matches 1 registry tool"), "{read}");
    assert!(read.contains("`Read` is active in mode `agent`"), "{read}");
    assert!(read.contains("NoDefer(Read)"), "{read}");
    // A pattern lists what it matches, each with its decision.
    let star = md(&c.at("textDocument/hover", &u, 3, 8));
    assert!(star.contains("matches 3 registry tools"), "{star}");
    assert!(star.contains("- `Bash`: hidden (hide)"), "{star}");
    // A hint: the tools that carry it.
    let hint = md(&c.at("textDocument/hover", &u, 4, 10));
    assert!(hint.contains("2 tools:"), "{hint}");
    assert!(
        hint.contains("`mcp__github__create_issue`") && !hint.contains("`Read`"),
        "{hint}"
    );
    // A setting: its meaning and default.
    let setting = md(&c.at("textDocument/hover", &u, 7, 4));
    assert!(setting.contains("default: `true`"), "{setting}");
    // Go to definition: a block's name is its block.
    let def = c.at("textDocument/definition", &u, 1, 7);
    assert_eq!(
        def["result"][0]["range"]["start"],
        json!({"line": 1, "character": 5})
    );
    c.stop();
}

#[test]
fn completion_offers_what_fits_where_the_cursor_is() {
    let dir = project("complete");
    let path = dir.join("p.policy");
    let text = "mode agent {\n  Defer(\n  activation = \n\n  Hide(source:mc\n}\n";
    let u = uri(&path);
    let mut c = Client::start(&dir, Value::Null);
    c.open(&u, text);
    let labels = |r: Value| -> Vec<String> {
        r["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["label"].as_str().unwrap().to_string())
            .collect()
    };
    let sel = labels(c.at("textDocument/completion", &u, 1, 8));
    for want in [
        "Read",
        "mcp__github__create_issue",
        "source:mcp:github",
        "hint:read_only",
    ] {
        assert!(sel.iter().any(|l| l == want), "{want} not in {sel:?}");
    }
    let values = labels(c.at("textDocument/completion", &u, 2, 15));
    assert_eq!(values, ["\"sticky\"", "\"per_prompt\""]);
    // What is typed of a selector is replaced whole, its prefix included.
    let typed = c.at("textDocument/completion", &u, 4, 16);
    let item = typed["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["label"] == "source:mcp:github")
        .unwrap_or_else(|| panic!("{typed}"))
        .clone();
    assert_eq!(
        item["textEdit"]["range"],
        json!({"start": {"line": 4, "character": 7}, "end": {"line": 4, "character": 16}})
    );
    let statements = labels(c.at("textDocument/completion", &u, 3, 2));
    for want in [
        "Defer",
        "NoDefer",
        "Hide",
        "Grant",
        "guard",
        "mode",
        "max_activations",
    ] {
        assert!(
            statements.iter().any(|l| l == want),
            "{want} not in {statements:?}"
        );
    }
    c.stop();
}

#[test]
fn formatting_is_policy_fmt_and_quick_fixes_edit_the_text() {
    let dir = project("edit");
    let path = dir.join("p.policy");
    let text = "search ToolSearch\nmode agent {\nnodefer( Read )\n  Defer(*)\n  Defer(*)\n}\n";
    let u = uri(&path);
    let mut c = Client::start(&dir, Value::Null);
    c.open(&u, text);
    let diags = c.diagnostics(&u, 1);
    assert!(codes(&diags).contains(&"PL103"), "{diags:?}");
    let fmt = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": u}, "options": {"tabSize": 2, "insertSpaces": true}}),
    );
    let edit = &fmt["result"][0];
    let want = toolpolicy::format::format("p.policy", text).unwrap();
    assert_eq!(apply(text, edit), want);
    // The repeated rule goes, with its line.
    let actions = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": u},
               "range": {"start": {"line": 4, "character": 2}, "end": {"line": 4, "character": 2}},
               "context": {"diagnostics": []}}),
    );
    let action = &actions["result"][0];
    assert_eq!(action["kind"], "quickfix", "{actions}");
    let edit = &action["edit"]["changes"][&u][0];
    assert_eq!(
        apply(text, edit),
        "search ToolSearch\nmode agent {\nnodefer( Read )\n  Defer(*)\n}\n"
    );
    // A did-you-mean becomes the word.
    let typo = "mode agent {\n  Defr(Bash)\n}\n";
    c.change(&u, 2, typo);
    let diags = c.diagnostics(&u, 2);
    assert_eq!(codes(&diags), ["PL004"]);
    let actions = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": u}, "range": diags[0]["range"], "context": {"diagnostics": diags}}),
    );
    let edit = &actions["result"][0]["edit"]["changes"][&u][0];
    assert_eq!(apply(typo, edit), "mode agent {\n  Defer(Bash)\n}\n");
    // A file with errors is not formatted: an error that says why.
    let fmt = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": u}, "options": {"tabSize": 2, "insertSpaces": true}}),
    );
    assert!(
        fmt["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("PL004"),
        "{fmt}"
    );
    c.stop();
}

#[test]
fn a_half_typed_file_never_stalls_the_server() {
    let dir = project("typing");
    let path = dir.join("p.policy");
    let u = uri(&path);
    let full = "search ToolSearch\nmode agent {\n  NoDefer(Read, \"a b\", skill:x)\n  when !codemode {\n    activation = \"per_prompt\"\n  }\n  Defer(*)\n}\nbot * { Hide(hint:destructive) }\n";
    let mut c = Client::start(&dir, Value::Null);
    c.open(&u, "");
    // Every prefix, as typed, with a request at the cursor after each.
    let mut version = 1;
    for (i, _) in full.char_indices().skip(1) {
        version += 1;
        let prefix = &full[..i];
        c.change(&u, version, prefix);
        let line = prefix.matches('\n').count();
        let col = prefix.len() - prefix.rfind('\n').map_or(0, |n| n + 1);
        let method = [
            "textDocument/hover",
            "textDocument/completion",
            "textDocument/definition",
        ][i % 3];
        let r = c.at(method, &u, line, col);
        assert!(r.get("error").is_none(), "{method} after {prefix:?}: {r}");
    }
    version += 1;
    c.change(&u, version, full);
    // The whole file loads: lints only, no errors.
    let diags = c.diagnostics(&u, version);
    assert!(
        !diags.is_empty() && codes(&diags).iter().all(|c| c.starts_with("PL1")),
        "{diags:?}"
    );
    c.stop();
}

#[test]
fn a_registry_that_cannot_be_read_is_a_diagnostic() {
    let dir = folder("bad-registry");
    std::fs::write(dir.join("tools.json"), "{not json").unwrap();
    let path = dir.join("p.policy");
    let u = uri(&path);
    // From the initialization options this time.
    let mut c = Client::start(&dir, json!({"registry": "tools.json", "mode": "agent"}));
    c.open(&u, "mode agent {\n  Defer(Bash)\n}\n");
    let diags = c.diagnostics(&u, 1);
    let msg = diags[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("bad registry") && msg.contains("tools.json"),
        "{msg}"
    );
    // The policy is still checked, and the server still answers.
    assert!(codes(&diags).contains(&"PL101"), "{diags:?}");
    let r = c.at("textDocument/hover", &u, 1, 9);
    assert!(
        r["result"]["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("Bash"),
        "{r}"
    );
    c.stop();
}

#[test]
fn exit_without_shutdown_is_exit_code_one() {
    let dir = folder("exit");
    let mut c = Client::start(&dir, Value::Null);
    c.notify("exit", Value::Null);
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(s) = c.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "policy lsp did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(1));
}

/// A small deterministic generator (xorshift), so that a failure repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn random_edits_and_requests_are_all_answered() {
    // Pieces of policies, glued at random: mostly almost-policies, with
    // unclosed blocks and rules, stray quotes, non-ASCII and line breaks of
    // every kind, and requests at random positions, past the end included.
    const PIECES: [&str; 24] = [
        "mode agent {",
        "}",
        "Defer(",
        ")",
        "NoDefer(Read, ",
        "Bash",
        "hint:",
        "read_only",
        "skill:\"a b\"",
        "source:mcp:*",
        "\n",
        "\r\n",
        "\r",
        "  ",
        "when !",
        "codemode {",
        "activation = ",
        "\"per_prompt\"",
        "max_activations = 99",
        "# ü 😀 (",
        "\"",
        "bot * {",
        "guard ",
        "search ToolSearch\n",
    ];
    const METHODS: [&str; 5] = [
        "textDocument/hover",
        "textDocument/completion",
        "textDocument/definition",
        "textDocument/formatting",
        "textDocument/codeAction",
    ];
    let dir = project("random");
    let u = uri(&dir.join("p.policy"));
    let mut c = Client::start(&dir, Value::Null);
    c.open(&u, "");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for version in 2..300 {
        let n = 1 + rng.below(30);
        let text: String = (0..n).map(|_| PIECES[rng.below(PIECES.len())]).collect();
        c.change(&u, version, &text);
        let line = rng.below(8);
        let character = rng.below(40);
        let pos = json!({"line": line, "character": character});
        let method = METHODS[rng.below(METHODS.len())];
        let params = match method {
            "textDocument/formatting" => json!({
                "textDocument": {"uri": u},
                "options": {"tabSize": 2, "insertSpaces": true},
            }),
            "textDocument/codeAction" => json!({
                "textDocument": {"uri": u},
                "range": {"start": pos, "end": pos},
                "context": {"diagnostics": []},
            }),
            _ => json!({"textDocument": {"uri": u}, "position": pos}),
        };
        let r = c.request(method, params);
        // Formatting a file with errors is refused, with the reason; every
        // other request has an answer.
        let refused_format = method == "textDocument/formatting"
            && r["error"]["code"] == json!(-32803)
            && r["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("errors");
        assert!(
            r.get("error").is_none() || refused_format,
            "{method} at {pos} of {text:?}: {r}"
        );
    }
    // Diagnostics still come, for the last text.
    c.change(&u, 300, "mode agent {\n  Defr(x)\n}\n");
    assert_eq!(codes(&c.diagnostics(&u, 300)), ["PL004"]);
    c.stop();
}

#[test]
fn hover_holds_the_registry_to_the_policy_s_lock() {
    let dir = project("lock");
    let path = dir.join("p.policy");
    let text = "lock = \"tools.lock\"\nmode agent {\n  NoDefer(Bash)\n}\n";
    std::fs::write(&path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_policy"))
        .args(["lock", "--policy"])
        .arg(&path)
        .arg("--registry")
        .arg(dir.join("tools.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Bash changes after the lock was written: it is unlocked, so hidden.
    std::fs::write(
        dir.join("tools.json"),
        REGISTRY.replace("Run a command", "Run any command"),
    )
    .unwrap();
    let u = uri(&path);
    let mut c = Client::start(&dir, Value::Null);
    c.open(&u, text);
    assert!(codes(&c.diagnostics(&u, 1)).contains(&"PL123"));
    let r = c.at("textDocument/hover", &u, 2, 11);
    let md = r["result"]["contents"]["value"].as_str().unwrap_or("");
    assert!(md.contains("`Bash` is hidden in mode `agent`"), "{md}");
    assert!(md.contains("lock"), "{md}");
    c.stop();
}

#[cfg(feature = "gateway")]
#[test]
fn the_gateway_s_servers_and_clients_files_get_the_loaders_diagnostics() {
    let dir = folder("gateway-files");
    let mut c = Client::start(&dir, Value::Null);
    let servers = uri(&dir.join("servers.json"));
    let text = "{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\"},\n    \"bad\": {\"args\": [\"x\"]}\n  }\n}\n";
    c.open(&servers, text);
    let diags = c.diagnostics(&servers, 1);
    assert_eq!(diags.len(), 1, "{diags:?}");
    let msg = diags[0]["message"].as_str().unwrap();
    assert!(msg.contains("mcpServers.bad"), "{msg}");
    assert_eq!(diags[0]["severity"], 1);
    assert_eq!(diags[0]["range"]["start"]["line"], 3, "{diags:?}");
    // Hover has nothing to say in JSON, and says nothing.
    assert_eq!(
        c.at("textDocument/hover", &servers, 3, 6)["result"],
        Value::Null
    );
    let clients = uri(&dir.join("clients.json"));
    c.open(
        &clients,
        "{\"clients\": {\"ci\": {\"token_sha256\": \"00\", \"mdoe\": \"x\"}}}",
    );
    let diags = c.diagnostics(&clients, 1);
    let all: Vec<&str> = diags.iter().filter_map(|d| d["message"].as_str()).collect();
    assert!(
        all.iter().any(|m| m.contains("did you mean `mode`")),
        "{all:?}"
    );
    // A file that is fixed has none.
    c.change(
        &servers,
        2,
        "{\"mcpServers\": {\"fs\": {\"command\": \"npx\"}}}",
    );
    assert_eq!(c.diagnostics(&servers, 2), Vec::<Value>::new());
    c.stop();
}
