//! Random (policy, context, item) cases, and the check of the compiled table
//! against the reference interpreter on them.
//!
//! One generator serves the differential run (`examples/differential`), its
//! small version in the test suite and the fuzz targets (`fuzz/`), which
//! include this file by path. It draws from a [`Dice`] so the same code runs
//! on a seeded generator (reproducible runs) and on a fuzzer's input bytes.
//!
//! The vocabulary is small on purpose: names of one to three letters from
//! `a` and `b`, patterns over `a`, `b` and `*`, two modes, two bots and two
//! flags, so that rules overlap, scopes collide and most questions the table
//! answers from precomputed sets also have a rule that nearly matches.

#![allow(dead_code)]

use toolpolicy::{CauseKind, Context, Decision, ItemKind, ItemRef, Policy, Table, reference};

/// A source of choices.
pub trait Dice {
    /// A number in `0..n`; `n` is at least 1.
    fn below(&mut self, n: usize) -> usize;

    /// True `num` times in `den`.
    fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }

    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len())]
    }
}

/// SplitMix64: tiny, fast, and fixed here so a seed means the same cases on
/// every machine and in every version.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The generator for group `index` of a run seeded with `seed`, so any
    /// group can be regenerated alone.
    pub fn for_group(seed: u64, index: u64) -> SplitMix {
        let mut outer = SplitMix(seed ^ index.wrapping_mul(0xA076_1D64_78BD_642F));
        SplitMix(outer.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Dice for SplitMix {
    fn below(&mut self, n: usize) -> usize {
        // Multiply-shift: unbiased enough for test generation, never divides.
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// Block heads, top level first.
pub const SCOPES: [&str; 6] = ["", "mode m1", "mode m2", "bot *", "bot r1", "bot r2"];
pub const WORDS: [&str; 4] = ["Defer", "NoDefer", "Hide", "Grant"];
/// Modes and bots a context may name; `m3` and `r3` are never declared.
pub const MODES: [&str; 3] = ["m1", "m2", "m3"];
pub const BOTS: [&str; 3] = ["r1", "r2", "r3"];
pub const FLAGS: [&str; 2] = ["f0", "f1"];

/// Every setting key with the values it may take.
const SETTINGS: [(&str, &[&str]); 8] = [
    ("defer_loading", &["true", "false"]),
    ("activation", &["\"sticky\"", "\"per_prompt\""]),
    ("max_activations", &["1", "2", "4"]),
    ("on_miss", &["\"activate\"", "\"error\""]),
    ("catalog_chars", &["0", "60", "200", "4000"]),
    ("catalog_line_chars", &["20", "40", "120"]),
    ("catalog_params", &["true", "false"]),
    ("unlocked", &["\"hide\"", "\"defer\"", "\"allow\""]),
];

/// A string of `min..=max` characters drawn from `alphabet`.
pub fn word(d: &mut impl Dice, alphabet: &[char], min: usize, max: usize) -> String {
    let len = min + d.below(max - min + 1);
    (0..len).map(|_| *d.pick(alphabet)).collect()
}

/// An item name: one to three of `a`, `b`.
pub fn name(d: &mut impl Dice) -> String {
    word(d, &['a', 'b'], 1, 3)
}

pub fn pattern(d: &mut impl Dice) -> String {
    word(d, &['a', 'b', '*'], 1, 3)
}

pub fn selector(d: &mut impl Dice) -> String {
    match d.below(5) {
        0 => format!("skill:{}", pattern(d)),
        1 => format!("source:{}", pattern(d)),
        _ => pattern(d),
    }
}

/// `when [!]fN`, a quarter of the time.
fn condition(d: &mut impl Dice) -> Option<String> {
    d.chance(1, 4).then(|| {
        format!(
            "when {}{}",
            if d.chance(1, 2) { "!" } else { "" },
            d.pick(&FLAGS)
        )
    })
}

/// A policy of up to `max_rules` rules and a few settings, as source text.
/// It always loads: settings are unique per scope and condition, guards and
/// search tools stand at top level and select tools only.
pub fn policy(d: &mut impl Dice, max_rules: usize) -> String {
    // Statements per scope, each with its condition.
    let mut scopes: Vec<Vec<(String, Option<String>)>> = vec![Vec::new(); SCOPES.len()];
    for _ in 0..d.below(max_rules + 1) {
        let sels: Vec<String> = (0..1 + d.below(2)).map(|_| selector(d)).collect();
        let rule = format!("{}({})", d.pick(&WORDS), sels.join(", "));
        let cond = condition(d);
        scopes[d.below(SCOPES.len())].push((rule, cond));
    }
    let mut seen = std::collections::HashSet::new();
    for _ in 0..d.below(4) {
        let (key, values) = *d.pick(&SETTINGS);
        let (scope, cond) = (d.below(SCOPES.len()), condition(d));
        if seen.insert((key, scope, cond.clone())) {
            scopes[scope].push((format!("{key} = {}", d.pick(values)), cond));
        }
    }
    let mut out = String::new();
    for head in ["guard", "search"] {
        if d.chance(1, 3) {
            let pats: Vec<String> = (0..1 + d.below(2)).map(|_| pattern(d)).collect();
            out += &format!("{head} {}\n", pats.join(", "));
        }
    }
    for (head, statements) in SCOPES.iter().zip(scopes) {
        let mut body = String::new();
        for (statement, cond) in statements {
            match cond {
                Some(c) => body += &format!("{c} {{\n{statement}\n}}\n"),
                None => body += &format!("{statement}\n"),
            }
        }
        if head.is_empty() {
            out += &body;
        } else if !body.is_empty() || d.chance(3, 4) {
            out += &format!("{head} {{\n{body}}}\n");
        }
    }
    out
}

/// A context: maybe a mode (mostly one the policy declares, `modes`), maybe
/// a bot, some flags, and now and then the runtime's own grants.
pub fn context(d: &mut impl Dice, modes: &[String]) -> Context {
    // A policy that declares modes rejects a context without one of them:
    // such contexts are drawn an eighth of the time each way, so that most
    // cases are decided rather than rejected.
    let mode = match d.below(8) {
        0 => None,
        1 => Some(d.pick(&MODES).to_string()),
        _ if modes.is_empty() => d.chance(1, 2).then(|| d.pick(&MODES).to_string()),
        _ => Some(d.pick(modes).clone()),
    };
    let bot = d.chance(1, 2).then(|| d.pick(&BOTS).to_string());
    let flags = FLAGS
        .iter()
        .filter(|_| d.chance(1, 2))
        .map(|f| f.to_string())
        .collect();
    let grants = d
        .chance(1, 5)
        .then(|| (0..d.below(3)).map(|_| selector(d)).collect());
    Context {
        mode,
        bot,
        flags,
        grants,
    }
}

/// An item as a registry or skill list would give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub skill: bool,
    pub name: String,
    pub source: Option<String>,
    pub hint: bool,
    pub invocable: bool,
    /// Its definition is not the lock's (a tool while the policy has a lock).
    pub unlocked: bool,
}

impl Item {
    pub fn as_ref(&self) -> ItemRef<'_> {
        ItemRef {
            kind: if self.skill {
                ItemKind::Skill
            } else {
                ItemKind::Tool
            },
            name: &self.name,
            source: self.source.as_deref(),
            defer_hint: self.hint,
            model_invocable: self.invocable,
            unlocked: self.unlocked,
            ..ItemRef::tool(&self.name)
        }
    }
}

pub fn item(d: &mut impl Dice) -> Item {
    Item {
        skill: d.chance(1, 3),
        name: name(d),
        source: d.chance(1, 2).then(|| word(d, &['a', 'b'], 0, 2)),
        hint: d.chance(1, 2),
        invocable: d.chance(4, 5),
        unlocked: d.chance(1, 4),
    }
}

/// What one group of cases covered.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    /// (policy, context, item) triples compared.
    pub cases: u64,
    pub policies: u64,
    /// Contexts the policy rejects (an undeclared mode); table and reference
    /// must reject them alike, and each item counts as a case.
    pub rejected: u64,
    /// Cases by exposure: active, deferred, hidden.
    pub exposures: [u64; 3],
    /// Cases by cause, in the order of [`CauseKind::ALL`].
    pub causes: [u64; CauseKind::ALL.len()],
}

impl Tally {
    pub fn add(&mut self, other: &Tally) {
        self.cases += other.cases;
        self.policies += other.policies;
        self.rejected += other.rejected;
        for (a, b) in self.exposures.iter_mut().zip(other.exposures) {
            *a += b;
        }
        for (a, b) in self.causes.iter_mut().zip(other.causes) {
            *a += b;
        }
    }

    fn count(&mut self, d: &Decision) {
        self.cases += 1;
        self.exposures[d.exposure as usize] += 1;
        if let Some(i) = CauseKind::ALL.iter().position(|c| *c == d.cause) {
            self.causes[i] += 1;
        }
    }
}

/// A disagreement, with everything needed to see it again.
#[derive(Debug, Clone)]
pub struct Mismatch {
    pub policy: String,
    pub context: Context,
    pub item: Option<Item>,
    pub what: String,
}

/// One policy, `contexts` contexts and `items` items per context: every
/// (context, item) pair decided by the table (both of its paths) and by the
/// reference interpreter.
pub fn group(d: &mut impl Dice, contexts: usize, items: usize) -> Result<Tally, Box<Mismatch>> {
    let text = policy(d, 10);
    let fail = |context: &Context, item: Option<&Item>, what: String| {
        Box::new(Mismatch {
            policy: text.clone(),
            context: context.clone(),
            item: item.cloned(),
            what,
        })
    };
    let loaded = Policy::parse("gen.policy", text.as_str())
        .map_err(|e| fail(&Context::default(), None, format!("does not load: {e}")))?;
    let table = Table::compile(&loaded);
    let mut tally = Tally {
        policies: 1,
        ..Tally::default()
    };
    for _ in 0..contexts {
        let ctx = context(d, table.modes());
        let resolved = table.resolve(&ctx);
        for _ in 0..items {
            let it = item(d);
            let want = reference::decide(&loaded, &ctx, &it.as_ref());
            match (&resolved, want) {
                (Ok(res), Ok(want)) => {
                    let got = table.decide(res, &it.as_ref());
                    if got != want {
                        return Err(fail(
                            &ctx,
                            Some(&it),
                            format!("table {got:?}, reference {want:?}"),
                        ));
                    }
                    let matches = table.matching_rules(&it.as_ref());
                    let with = table.decide_with(res, &it.as_ref(), &matches);
                    if with != want {
                        return Err(fail(
                            &ctx,
                            Some(&it),
                            format!("decide_with {with:?}, reference {want:?}"),
                        ));
                    }
                    tally.count(&want);
                }
                (Err(a), Err(b)) if *a == b => {
                    tally.cases += 1;
                    tally.rejected += 1;
                }
                (a, b) => {
                    return Err(fail(
                        &ctx,
                        Some(&it),
                        format!("table {a:?}, reference {b:?}"),
                    ));
                }
            }
        }
    }
    Ok(tally)
}

/// `cases` triples from `seed`, in groups of 4 contexts × 8 items; stops at
/// the first mismatch, naming its group so it can be run alone.
pub fn run(seed: u64, cases: u64) -> Result<Tally, (u64, Box<Mismatch>)> {
    const CONTEXTS: usize = 4;
    const ITEMS: usize = 8;
    let mut total = Tally::default();
    let mut index = 0;
    while total.cases < cases {
        let mut dice = SplitMix::for_group(seed, index);
        let tally = group(&mut dice, CONTEXTS, ITEMS).map_err(|m| (index, m))?;
        total.add(&tally);
        index += 1;
    }
    Ok(total)
}
