//! Benchmark data: the real fixture registries, registries of any size grown
//! from them, and realistic generated policies whose rules refer to those tools.
//!
//! Shared by `benches/engine.rs` and `examples/memory.rs` (through `#[path]`),
//! so both measure the same data. Everything is deterministic: a fixed seed,
//! no clock, no environment.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use toolpolicy::{Registry, Tool};

/// Where the tools came from, for the bench's own output.
pub struct Fixtures {
    pub tools: Vec<Tool>,
    pub origin: String,
}

/// The fixture registries joined in file-name order (261 tools when
/// `../shared/fixtures/registries/` is there), else the project's bundled
/// registries in `examples/registries/`. `None`, with a message on stderr, when
/// neither exists.
pub fn fixtures() -> Option<Fixtures> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // `TOOLPOLICY_FIXTURES` names the shared registries where the checkout
    // does not sit beside them (a git worktree), as for the tests.
    let shared = std::env::var_os("TOOLPOLICY_FIXTURES")
        .map_or_else(|| root.join("../shared/fixtures/registries"), Into::into);
    let candidates = [shared, root.join("examples/registries")];
    for dir in &candidates {
        if let Some(tools) = read_dir(dir) {
            return Some(Fixtures {
                origin: format!("{} tools from {}", tools.len(), dir.display()),
                tools,
            });
        }
    }
    eprintln!(
        "bench data: no registry folder found (looked in {} and {}); \
         skipping the benches that need real tool definitions",
        candidates[0].display(),
        candidates[1].display()
    );
    None
}

fn read_dir(dir: &Path) -> Option<Vec<Tool>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p.to_string_lossy().ends_with(".meta.json")
        })
        .collect();
    files.sort();
    let mut tools: Vec<Tool> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for f in files {
        let text = std::fs::read_to_string(&f).ok()?;
        match Registry::from_json(&text) {
            // A name two files share (the bundled registries each have
            // their search tool) is kept once: a registry's names are unique.
            Ok(r) => tools.extend(
                r.tools()
                    .iter()
                    .filter(|t| seen.insert(t.name.clone()))
                    .cloned(),
            ),
            Err(e) => {
                eprintln!("bench data: skipping {}: {e}", f.display());
            }
        }
    }
    (!tools.is_empty()).then_some(tools)
}

/// A registry of `n` tools grown from real ones: the first copy keeps the real
/// names, later copies are the same servers installed again under another name
/// (`github7_create_issue`, source `mcp:github7`), as in a large MCP
/// installation. Descriptions and schemas are kept verbatim.
pub fn scaled(base: &[Tool], n: usize) -> Registry {
    let tools = (0..n)
        .map(|i| {
            let t = &base[i % base.len()];
            let copy = i / base.len();
            if copy == 0 {
                return t.clone();
            }
            let server = server_of(t);
            Tool {
                name: format!("{server}{copy}_{}", t.name),
                source: Some(format!(
                    "{}{copy}",
                    t.source.as_deref().unwrap_or("mcp:local")
                )),
                ..t.clone()
            }
        })
        .collect();
    Registry::new(tools).expect("scaled names are unique")
}

/// A terms file of `per_tool` learned terms for each tool: requests of the
/// kind `policy learn` keeps (a verb, one of the tool's own name words, a
/// thing), so that the queries' words reach many terms, as they would in a
/// file learnt from a large log.
pub fn terms(tools: &[Tool], per_tool: usize) -> toolpolicy::terms::TermsFile {
    const VERBS: [&str; 8] = [
        "show", "get", "make", "find", "change", "open", "list", "send",
    ];
    const THINGS: [&str; 12] = [
        "the latest one",
        "for my team",
        "from yesterday",
        "in the browser",
        "on the server",
        "as markdown",
        "for this repo",
        "with the weather",
        "by its name",
        "before the meeting",
        "查询 一下",
        "最新 的",
    ];
    let mut file = toolpolicy::terms::TermsFile::new();
    for (i, t) in tools.iter().enumerate() {
        let words: Vec<&str> = t
            .name
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        for j in 0..per_tool {
            let word = words.get(j % words.len().max(1)).copied().unwrap_or("tool");
            let term = format!(
                "{} {word} {} {j}",
                VERBS[(i + j) % VERBS.len()],
                THINGS[(i * 7 + j) % THINGS.len()]
            );
            file.teach(&t.name, &term, 2);
        }
    }
    file
}

/// The short server name of a tool's source: `mcp:github` → `github`.
fn server_of(t: &Tool) -> String {
    let s = t.source.as_deref().unwrap_or("local");
    let s = s.rsplit(':').next().unwrap_or(s);
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
}

/// A small deterministic generator (SplitMix64), so the data needs no `rand`.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The modes, bots and flags of generated policies.
pub const MODES: [&str; 6] = ["agent", "chat", "review", "plan", "ops", "research"];
pub const BOTS: [&str; 4] = ["reviewer", "deployer", "triage", "scribe"];
pub const FLAGS: [&str; 3] = ["codemode", "offline", "trusted"];

/// A pattern as policy text: bare when it can be, quoted otherwise.
fn quote(p: &str) -> String {
    let bare = !p.is_empty()
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:*".contains(c))
        && !p.starts_with("skill:")
        && !p.starts_with("source:");
    if bare {
        p.to_string()
    } else {
        format!("\"{}\"", p.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// Selector shapes, by how they are written.
#[derive(Clone, Copy)]
enum Shape {
    Exact,
    Prefix,
    Suffix,
    General,
    Source,
    Skill,
}

/// How often each rule kind uses each shape (percent, in `Shape` order):
/// hiding and granting name tools, deferring and declaring also take groups.
fn shapes(kind: &str) -> [usize; 6] {
    match kind {
        "Hide" => [80, 5, 0, 0, 10, 5],
        "Grant" => [50, 25, 0, 5, 15, 5],
        "NoDefer" => [60, 15, 5, 10, 5, 5],
        _ => [30, 30, 10, 10, 15, 5],
    }
}

/// One selector that picks some of `tools`: an exact name, a prefix (a server
/// copy or a tool family), a suffix, a general `a*b` pattern, a `source:`
/// selector, or now and then a skill.
fn selector(rng: &mut Rng, tools: &[Tool], kind: &str) -> String {
    let t = rng.pick(tools);
    let parts: Vec<&str> = t.name.split('_').filter(|s| !s.is_empty()).collect();
    let first = parts.first().copied().unwrap_or(&t.name);
    let second = parts.get(1).copied().unwrap_or(first);
    let last = parts.last().copied().unwrap_or(&t.name);
    let mut roll = rng.below(100);
    let mut shape = Shape::Exact;
    for (s, w) in [
        Shape::Exact,
        Shape::Prefix,
        Shape::Suffix,
        Shape::General,
        Shape::Source,
        Shape::Skill,
    ]
    .into_iter()
    .zip(shapes(kind))
    {
        if roll < w {
            shape = s;
            break;
        }
        roll -= w;
    }
    match shape {
        Shape::Exact => quote(&t.name),
        Shape::Prefix if parts.len() > 2 => quote(&format!("{first}_{second}_*")),
        Shape::Prefix => quote(&format!("{first}_*")),
        Shape::Suffix => quote(&format!("*_{second}_{last}")),
        Shape::General => quote(&format!("{first}*{last}")),
        Shape::Source => match &t.source {
            Some(s) if rng.below(4) != 0 => format!("source:{}", quote(s)),
            Some(s) => format!("source:{}*", quote(s)),
            None => quote(&t.name),
        },
        Shape::Skill => format!("skill:{}", quote(&format!("{first}-skill"))),
    }
}

/// One rule line: `Kind(sel, ...)` with one to three selectors.
fn rule(rng: &mut Rng, tools: &[Tool], kind: &str) -> String {
    let n = 1 + rng.below(3);
    let sels: Vec<String> = (0..n).map(|_| selector(rng, tools, kind)).collect();
    format!("{kind}({})", sels.join(", "))
}

/// A realistic policy of `rules` rules over `tools`: top-level guards, a search
/// tool and defaults, then six modes, `bot *` and four named bots, each with
/// `when` blocks, mixing NoDefer, Defer, Hide and (in named bots) Grant rules.
/// Deterministic for a given seed.
pub fn policy(tools: &[Tool], rules: usize, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut out = String::with_capacity(rules * 60);
    out.push_str("# generated benchmark policy\n");
    let _ = writeln!(out, "guard {}", quote(&tools[0].name));
    let _ = writeln!(out, "search {}", quote(&tools[tools.len() / 2].name));
    out.push_str("activation = \"sticky\"\nmax_activations = 4\nDefer(*)\n");
    let mut left = rules.saturating_sub(3);
    // Blocks: top level (10%), modes (60%), bot * (5%), named bots (25%).
    let mut blocks: Vec<(String, usize)> = vec![(String::new(), left / 10)];
    let per_mode = left * 6 / 10 / MODES.len();
    for m in MODES {
        blocks.push((format!("mode {m}"), per_mode));
    }
    blocks.push(("bot *".to_string(), left / 20));
    let per_bot = left / 4 / BOTS.len();
    for b in BOTS {
        blocks.push((format!("bot {b}"), per_bot));
    }
    let assigned: usize = blocks.iter().map(|(_, n)| n).sum();
    blocks[1].1 += left - assigned;
    for (bi, (head, n)) in blocks.iter().enumerate() {
        let named_bot = head.starts_with("bot ") && head != "bot *";
        let indent = if head.is_empty() { "" } else { "  " };
        if !head.is_empty() {
            let _ = writeln!(out, "{head} {{");
        }
        if head.starts_with("mode ") && bi % 2 == 0 {
            let _ = writeln!(out, "  catalog_chars = {}", 2000 + 500 * bi);
        }
        // A fifth of each block sits under a `when` (one per flag at most).
        let conditional = n / 5;
        let plain = n - conditional;
        let mut emit = |out: &mut String, count: usize, indent: &str| {
            for i in 0..count {
                let kind = if named_bot && i % 7 == 0 {
                    "Grant"
                } else {
                    match rng.below(100) {
                        0..50 => "NoDefer",
                        50..90 => "Defer",
                        _ => "Hide",
                    }
                };
                let _ = writeln!(out, "{indent}{}", rule(&mut rng, tools, kind));
            }
        };
        emit(&mut out, plain, indent);
        if conditional > 0 {
            let flag = FLAGS[bi % FLAGS.len()];
            let neg = if bi % 2 == 0 { "" } else { "!" };
            let _ = writeln!(out, "{indent}when {neg}{flag} {{");
            if head.starts_with("mode ") && bi % 3 == 0 {
                let _ = writeln!(out, "{indent}  defer_loading = false");
            }
            emit(&mut out, conditional, &format!("{indent}  "));
            let _ = writeln!(out, "{indent}}}");
        }
        if !head.is_empty() {
            out.push_str("}\n");
        }
        left = left.saturating_sub(*n);
    }
    out
}

/// A policy of `rules` rules spread over `modes` modes (`m0` ...) and `bots`
/// bots (`b0` ...), after a tenth of them at top level: the shape of a large
/// installation with one mode per project and one bot per team, for the
/// benches of what grows with contexts. No `when` blocks: with 50 modes and
/// 50 bots, one flag would take the contexts past what lints walk.
pub fn wide_policy(tools: &[Tool], rules: usize, modes: usize, bots: usize, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut out = String::with_capacity(rules * 60);
    let _ = writeln!(out, "guard {}", quote(&tools[0].name));
    let _ = writeln!(out, "search {}", quote(&tools[tools.len() / 2].name));
    out.push_str("Defer(*)\n");
    let top = rules / 10;
    let per_block = (rules - top) / (modes + bots).max(1);
    let mut emit = |out: &mut String, count: usize, indent: &str, grants: bool| {
        for i in 0..count {
            let kind = match rng.below(100) {
                _ if grants && i % 7 == 0 => "Grant",
                0..50 => "NoDefer",
                50..90 => "Defer",
                _ => "Hide",
            };
            let _ = writeln!(out, "{indent}{}", rule(&mut rng, tools, kind));
        }
    };
    emit(&mut out, top, "", false);
    let heads = (0..modes)
        .map(|m| (format!("mode m{m}"), false))
        .chain((0..bots).map(|b| (format!("bot b{b}"), true)));
    for (head, grants) in heads {
        let _ = writeln!(out, "{head} {{");
        emit(&mut out, per_block, "  ", grants);
        out.push_str("}\n");
    }
    out
}
