//! `policy fmt` over random valid policies written carelessly (any case, any
//! spacing, comments everywhere, blank lines, rules across lines, one-line
//! blocks): formatting twice changes nothing, the result parses to the same
//! rules and settings, and every comment survives in order.

use proptest::prelude::*;
use toolpolicy::Policy;
use toolpolicy::format::{format, same_meaning};

/// A small deterministic generator of the noise: case, spacing, comments.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }

    fn space(&mut self) -> &'static str {
        self.pick(&["", " ", "  ", "\t"])
    }

    /// A keyword or rule word in random case.
    fn case(&mut self, word: &str) -> String {
        word.chars()
            .map(|c| {
                if self.chance(30) {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect()
    }

    fn comment(&mut self, n: &mut usize) -> String {
        *n += 1;
        let body = self.pick(&["", " ", "  note "]);
        format!("#{body}c{n}")
    }

    fn blank_lines(&mut self) -> &'static str {
        self.pick(&["", "", "\n", "\n\n\n"])
    }
}

const PATTERNS: [&str; 10] = [
    "Read",
    "web_*",
    "*",
    "mcp:git*",
    "\"has space\"",
    "\"x#y\"",
    "\"q\\\"t\"",
    "\"skill:zz\"",
    "\"é*\"",
    "a.b/c-d",
];
const WORDS: [&str; 4] = ["Defer", "NoDefer", "Hide", "Grant"];
const KEYS: [(&str, &str); 4] = [
    ("defer_loading", "false"),
    ("activation", "\"per_prompt\""),
    ("max_activations", "7"),
    ("catalog_params", "TRUE"),
];

#[derive(Debug, Clone)]
enum Stmt {
    Rule(usize, Vec<(usize, usize)>),
    Setting(usize),
}

#[derive(Debug, Clone)]
struct Body {
    stmts: Vec<Stmt>,
    /// A `when` block inside (not nested further).
    when: Option<(bool, Vec<Stmt>)>,
}

fn stmt() -> impl Strategy<Value = Stmt> {
    prop_oneof![
        4 => (0..4usize, prop::collection::vec((0..3usize, 0..PATTERNS.len()), 1..4))
            .prop_map(|(w, s)| Stmt::Rule(w, s)),
        1 => (0..KEYS.len()).prop_map(Stmt::Setting),
    ]
}

fn body() -> impl Strategy<Value = Body> {
    (
        prop::collection::vec(stmt(), 0..4),
        prop::option::of((any::<bool>(), prop::collection::vec(stmt(), 0..3))),
    )
        .prop_map(|(stmts, when)| Body { stmts, when })
}

/// Removes settings that repeat a key in one block (an error, not formatting).
fn dedup_settings(stmts: &mut Vec<Stmt>) {
    let mut seen = std::collections::HashSet::new();
    stmts.retain(|s| match s {
        Stmt::Setting(k) => seen.insert(*k),
        Stmt::Rule(..) => true,
    });
}

struct Writer {
    noise: Noise,
    comments: usize,
    out: String,
}

impl Writer {
    fn line_end(&mut self) {
        if self.noise.chance(25) {
            let c = self.noise.comment(&mut self.comments);
            let sp = self.noise.space();
            self.out += &format!("{sp} {c}");
        }
        self.out.push('\n');
        let blanks = self.noise.blank_lines();
        self.out += blanks;
        if self.noise.chance(15) {
            let c = self.noise.comment(&mut self.comments);
            self.out += &format!("{c}\n");
        }
    }

    fn stmt(&mut self, s: &Stmt, indent: &str) {
        self.out += indent;
        match s {
            Stmt::Setting(k) => {
                let (key, value) = KEYS[*k];
                let key = self.noise.case(key);
                let (a, b) = (self.noise.space(), self.noise.space());
                self.out += &format!("{key}{a}={b}{value}");
            }
            Stmt::Rule(w, sels) => {
                let word = self.noise.case(WORDS[*w]);
                let multi = self.noise.chance(30);
                self.out += &format!("{word}(");
                for (i, (kind, p)) in sels.iter().enumerate() {
                    if i > 0 {
                        self.out += ",";
                        if multi && self.noise.chance(50) {
                            let c = self.noise.comment(&mut self.comments);
                            self.out += &format!(" {c}");
                        }
                        self.out += if multi { "\n    " } else { self.noise.space() };
                    }
                    let prefix = ["", "skill:", "source:"][*kind];
                    let p = PATTERNS[*p];
                    // A quoted tool pattern that looks prefixed stays a tool.
                    self.out += &format!("{prefix}{p}");
                }
                if multi {
                    self.out += "\n";
                }
                self.out += ")";
            }
        }
        self.line_end();
    }

    fn block(&mut self, head: &str, body: &Body) {
        let one_line = body.when.is_none() && body.stmts.len() == 1 && self.noise.chance(30);
        if one_line {
            let mut inner = Writer {
                noise: Noise(self.noise.next() | 1),
                comments: 0,
                out: String::new(),
            };
            inner.stmt(&body.stmts[0], "");
            // Keep the statement's own text only (no comments or blank lines).
            let text = inner
                .out
                .lines()
                .next()
                .unwrap_or("")
                .split('#')
                .next()
                .unwrap_or("");
            let text = if text.contains('"') {
                None
            } else {
                Some(text.trim_end())
            };
            // Only a statement that fits on its line (not a rule across lines).
            if let Some(text) = text.filter(|t| !t.contains('(') || t.ends_with(')')) {
                self.out += &format!("{head} {{ {text} }}");
                self.line_end();
                return;
            }
        }
        self.out += &format!("{head}{}{{", self.noise.space());
        self.line_end();
        for s in &body.stmts {
            self.stmt(s, "  ");
        }
        if let Some((neg, stmts)) = &body.when {
            let kw = self.noise.case("when");
            let bang = if *neg { "!" } else { "" };
            self.out += &format!("  {kw} {bang}flag{} {{", self.comments);
            self.line_end();
            for s in stmts {
                self.stmt(s, "    ");
            }
            self.out += "  }";
            self.line_end();
        }
        self.out += "}";
        self.line_end();
    }
}

fn document() -> impl Strategy<Value = (Vec<Stmt>, Vec<Body>, u64)> {
    (
        prop::collection::vec(stmt(), 0..4),
        prop::collection::vec(body(), 0..4),
        any::<u64>(),
    )
}

fn write((top, blocks, seed): &(Vec<Stmt>, Vec<Body>, u64)) -> String {
    let mut w = Writer {
        noise: Noise(seed | 1),
        comments: 0,
        out: String::new(),
    };
    if w.noise.chance(50) {
        let c = w.noise.comment(&mut w.comments);
        w.out += &format!("{c}\n\n");
    }
    let g = w.noise.case("guard");
    w.out += &format!("{g} new_context");
    w.line_end();
    let mut top = top.clone();
    dedup_settings(&mut top);
    for s in &top {
        w.stmt(s, "");
    }
    let heads = ["mode m1", "mode \"my mode\"", "bot *", "bot r-1"];
    for (head, b) in heads.iter().zip(blocks) {
        let mut b = b.clone();
        dedup_settings(&mut b.stmts);
        if let Some((_, s)) = &mut b.when {
            dedup_settings(s);
        }
        let (kw, rest) = head.split_once(' ').unwrap_or((head, ""));
        let head = format!("{} {rest}", w.noise.case(kw));
        w.block(&head, &b);
    }
    w.out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn formatting_is_idempotent_and_faithful(doc in document()) {
        let text = write(&doc);
        let original = match Policy::parse("gen.policy", text.as_str()) {
            Ok(p) => p,
            Err(e) => { prop_assert!(false, "generator wrote an invalid policy:\n{}\n{}", text, e); unreachable!() }
        };
        let once = format("gen.policy", &text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let twice = format("gen.policy", &once).map_err(|e| TestCaseError::fail(format!("{e}\n{once}")))?;
        prop_assert_eq!(&twice, &once, "not idempotent; source:\n{}", text);
        let formatted = Policy::parse("gen.policy", once.as_str()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        if let Err(why) = same_meaning(&original, &formatted) {
            prop_assert!(false, "{}\n--- source\n{}--- formatted\n{}", why, text, once);
        }
        let count = |s: &str| s.matches("#").count() - s.matches("x#y").count();
        prop_assert_eq!(count(&once), count(&text), "comments lost:\n{}\n---\n{}", text, once);
    }
}
