//! A session driven by arbitrary operations over a generated policy, registry
//! and skill list: search, load, call with each result status, a result on
//! its own, prompt, compact, restart, resume from the persisted state, mode
//! and context switches, skill lookups, and reloads of the policy, registry
//! and skill list (good and bad). After every operation the plan is checked
//! against the table, and the table against the reference interpreter.

#![no_main]

use libfuzzer_sys::fuzz_target;
use toolpolicy::runtime::{CallOutcome, Engine};
use toolpolicy::{Context, Policy, Registry, Session, SessionState, SkillList};
use toolpolicy_fuzz::cases::{self, Dice};
use toolpolicy_fuzz::invariants::Oracle;
use toolpolicy_fuzz::{Bytes, world};

/// Operations per input: enough to reach every state, few enough to keep
/// each input fast.
const MAX_OPS: usize = 48;

fn names(d: &mut Bytes<'_>) -> Vec<String> {
    (0..d.below(4)).map(|_| cases::name(d)).collect()
}

fn engine(d: &mut Bytes<'_>) -> Option<Engine> {
    let policy = Policy::parse("gen.policy", cases::policy(d, 8)).ok()?;
    let registry = Registry::from_json(&world::registry_json(d, 8)).ok()?;
    let skills = SkillList::from_json(&world::skills_json(d, 3)).ok()?;
    Some(Engine::new(policy, registry, skills))
}

/// The session's activations that the current registry still has: a
/// session drops those a registry reload removed at its next mutating call,
/// and reports them by name until then.
fn current(e: &Engine, s: &Session) -> Vec<String> {
    let mut names = s.activated();
    names.retain(|n| e.snapshot().registry().index_of(n).is_some());
    names
}

/// One operation; returns the session to go on with (a resume replaces it).
fn step(d: &mut Bytes<'_>, e: &Engine, mut s: Session) -> Session {
    let oracle = Oracle::new(e, s.context());
    let before = current(e, &s);
    let status = *d.pick(&world::STATUSES);
    let mut appends_only = true;
    let op = d.below(14);
    if std::env::var_os("FUZZ_TRACE").is_some() {
        eprintln!("op {op} in {:?}, activated {before:?}", s.context());
    }
    match op {
        0 => {
            let query = world::words(d, 3);
            let names = names(d);
            if let (Ok(r), Some(o)) = (s.search_with_status(e, &query, &names, status), &oracle) {
                o.check_result(&r);
            }
        }
        1 => {
            let names = names(d);
            if let (Ok(r), Some(o)) = (s.load_with_status(e, &names, status), &oracle) {
                o.check_result(&r);
            }
        }
        2 => {
            let name = cases::name(d);
            if let Ok(CallOutcome::Allowed) = s.call(e, &name) {
                let declared = s.plan(e).is_ok_and(|p| p.is_declared(&name));
                assert!(declared, "call of undeclared `{name}` allowed");
                let _ = s.record_result(e, &name, status);
            }
        }
        3 => {
            let _ = s.record_result(e, &cases::name(d), status);
        }
        4 => {
            appends_only = false;
            let _ = s.prompt(e);
        }
        5 => {
            s.compact();
            assert!(s.evidence().is_empty());
        }
        6 => {
            appends_only = false;
            let _ = s.restart(e);
        }
        7 => {
            appends_only = false;
            let state = s.state();
            let text = serde_json::to_string(&state).unwrap_or_default();
            let back: Result<SessionState, _> = serde_json::from_str(&text);
            assert_eq!(back.ok().as_ref(), Some(&state), "{text}");
            if let Ok(resumed) = e.resume(state) {
                s = resumed;
            }
        }
        8 => {
            appends_only = false;
            let mode = d.chance(3, 4).then(|| *d.pick(&cases::MODES));
            let _ = s.set_mode(e, mode);
        }
        9 => {
            appends_only = false;
            let modes = e.snapshot().policy().modes.clone();
            let _ = s.set_context(e, cases::context(d, &modes));
        }
        10 => {
            appends_only = false;
            let mut text = cases::policy(d, 8);
            let broken = d.chance(1, 4);
            if broken {
                text += "Defer(a\n";
            }
            let old = e.snapshot();
            let loaded = e.reload_policy("gen.policy", &text);
            assert_eq!(loaded.is_err(), broken, "{text}");
            if broken {
                assert!(std::ptr::eq(old.policy(), e.snapshot().policy()));
            }
        }
        11 => {
            appends_only = false;
            let mut json = world::registry_json(d, 8);
            let cut_short = d.chance(1, 4);
            if cut_short {
                // A document cut short: never loads, leaves the engine as it was.
                let mut cut = json.len() / 2;
                while !json.is_char_boundary(cut) {
                    cut -= 1;
                }
                json.truncate(cut);
            }
            let old = e.snapshot();
            let loaded = e.reload_registry(&json);
            assert_eq!(loaded.is_err(), cut_short, "{json}");
            if cut_short {
                assert!(std::ptr::eq(old.registry(), e.snapshot().registry()));
            }
        }
        12 => {
            let _ = e.reload_skills(&world::skills_json(d, 3));
        }
        _ => {
            // A skill the model names: checked with the plan below.
            let _ = s.resolve_skill(e, &cases::name(d));
        }
    }
    if appends_only {
        let after = current(e, &s);
        assert!(after.starts_with(&before), "{before:?} -> {after:?}");
    }
    match Oracle::new(e, s.context()) {
        Some(o) => o.check_plan(e, &s),
        None => assert!(s.plan(e).is_err()),
    }
    s
}

fuzz_target!(|data: &[u8]| {
    let mut d = Bytes(arbitrary::Unstructured::new(data));
    let Some(e) = engine(&mut d) else {
        panic!("a generated policy, registry or skill list does not load");
    };
    if std::env::var_os("FUZZ_TRACE").is_some() {
        let snap = e.snapshot();
        eprintln!("policy:\n{}", snap.policy().source.text);
        let tools: Vec<_> = snap
            .registry()
            .tools()
            .iter()
            .map(|t| (&t.name, &t.source, t.defer_loading))
            .collect();
        eprintln!("tools: {tools:?}");
    }
    let modes = e.snapshot().policy().modes.clone();
    let ctx = cases::context(&mut d, &modes);
    let mut s = match e.session(ctx) {
        Ok(s) => s,
        // A declared mode, or none when the policy declares none, is
        // always a context.
        Err(_) => {
            let mode = e.snapshot().policy().modes.first().cloned();
            let ctx = Context {
                mode,
                ..Context::default()
            };
            match e.session(ctx) {
                Ok(s) => s,
                Err(err) => panic!("a declared mode is rejected: {err}"),
            }
        }
    };
    for _ in 0..MAX_OPS {
        if d.is_empty() {
            break;
        }
        s = step(&mut d, &e, s);
    }
});
