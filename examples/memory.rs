//! What sessions cost in memory (docs/performance.md, "Memory").
//!
//! `cargo run --release --example memory` builds one engine over a registry of
//! 10,000 tools (grown from the fixture registries, see `benches/data/`) and a
//! 1,000-rule policy, then opens 100,000 sessions on it and measures, with a
//! counting global allocator, the heap they take: per session without
//! activations, per activated tool, and in total. It also reports the
//! process's resident set size, which includes the allocator's own overhead.
//!
//! Exits with status 1 when a figure is over the budget: a session at most
//! 1 KiB, at most 16 bytes per activated tool, everything within 200 MiB.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use toolpolicy::runtime::Engine;
use toolpolicy::{Context, Policy, Session, SkillList};

#[path = "../benches/data/mod.rs"]
mod data;

/// The system allocator, counting the bytes currently allocated.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as `System.alloc`.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as `System.dealloc`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as `System.alloc_zeroed`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as `System.realloc`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Resident set size in bytes, where `/proc` tells it.
fn rss() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

const TOOLS: usize = 10_000;
const RULES: usize = 1_000;
const SESSIONS: usize = 100_000;
/// Sessions and activations each for the per-activation figure.
const ACTIVE_SESSIONS: usize = 10_000;
const ACTIVATIONS: usize = 16;

const SESSION_BUDGET: f64 = 1024.0;
const ACTIVATION_BUDGET: f64 = 16.0;
const TOTAL_BUDGET: usize = 200 << 20;

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

fn main() {
    let Some(fixtures) = data::fixtures() else {
        eprintln!("memory: no registries to build from; nothing measured");
        return;
    };
    let start = live();
    let registry = data::scaled(&fixtures.tools, TOOLS);
    let text = data::policy(registry.tools(), RULES, 3);
    let policy = match Policy::parse("memory.policy", text) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("memory: the generated policy does not load:\n{e}");
            std::process::exit(2);
        }
    };
    let engine = Engine::new(policy, registry, SkillList::default());
    let engine_only = live() - start;
    let ctx = Context::mode("agent");
    // The context's base plan is shared by every session in it: make it
    // before counting, so it is not charged to the sessions.
    let first = engine.session(ctx.clone()).expect("declared mode");
    let base_plan = live() - start - engine_only;
    let plan = first.plan(&engine).expect("plan");
    let deferred: Vec<String> = plan.deferred().map(|t| t.name.clone()).collect();
    drop(plan);
    // Everything the sessions share (the names kept for the loads below too).
    let engine_bytes = live() - start;

    // The search lexicon (WordNet, CC-CEDICT) is built once per process on
    // the first query that needs it, whatever the number of engines or tools.
    let before = live();
    let _ = engine
        .snapshot()
        .search_index()
        .rank("tell me when the 日程 changes", |_| true);
    let lexicon_bytes = live() - before;

    // Sessions without activations.
    let before = live();
    let mut sessions: Vec<Session> = Vec::with_capacity(SESSIONS);
    for _ in 0..SESSIONS {
        sessions.push(engine.session(ctx.clone()).expect("declared mode"));
    }
    let session_bytes = (live() - before) as f64 / SESSIONS as f64;
    let total = live() - start;
    let resident = rss();

    // Sessions with activations: loads of four tools at a time, as a model
    // would after searches; compared with the same number of bare sessions.
    let before = live();
    let mut active: Vec<Session> = Vec::with_capacity(ACTIVE_SESSIONS);
    for k in 0..ACTIVE_SESSIONS {
        let mut s = engine.session(ctx.clone()).expect("declared mode");
        for chunk in 0..ACTIVATIONS / 4 {
            let names: Vec<&str> = (0..4)
                .map(|j| deferred[(k * 7 + chunk * 4 + j) % deferred.len()].as_str())
                .collect();
            let r = s.load(&engine, &names).expect("load");
            assert_eq!(r.activated.len(), 4, "every load activates four tools");
        }
        active.push(s);
    }
    let with_activations = (live() - before) as f64 / ACTIVE_SESSIONS as f64;
    let per_activation = (with_activations - session_bytes) / ACTIVATIONS as f64;

    println!("bench data: {}", fixtures.origin);
    println!(
        "engine: {TOOLS} tools, {RULES} rules, {} deferred in mode `agent`: {} of heap",
        deferred.len(),
        mib(engine_bytes)
    );
    println!(
        "engine heap per registry tool: {:.0} bytes",
        engine_bytes as f64 / TOOLS as f64
    );
    println!(
        "search lexicon, once per process (not per engine or tool): {:.0} KiB",
        lexicon_bytes as f64 / 1024.0
    );
    println!(
        "of which the base plan of one context (shared by its sessions, cached per context): {:.0} KiB",
        base_plan as f64 / 1024.0
    );
    println!(
        "session without activations: {session_bytes:.0} bytes \
         ({} inline + {:.0} on the heap; budget {SESSION_BUDGET:.0})",
        std::mem::size_of::<Session>(),
        session_bytes - std::mem::size_of::<Session>() as f64
    );
    println!(
        "per activated tool: {per_activation:.1} bytes \
         (sessions with {ACTIVATIONS} activations: {with_activations:.0} bytes each; \
         budget {ACTIVATION_BUDGET:.0})"
    );
    println!(
        "{SESSIONS} sessions + engine: {} of heap (sessions {}, engine {}, lexicon {}); budget {}",
        mib(total),
        mib(total - engine_bytes - lexicon_bytes),
        mib(engine_bytes),
        mib(lexicon_bytes),
        mib(TOTAL_BUDGET)
    );
    if let Some(r) = resident {
        println!("resident set size of this process then: {}", mib(r));
    }
    drop((sessions, active, first));

    let mut over = Vec::new();
    if session_bytes > SESSION_BUDGET {
        over.push("bytes per session");
    }
    if per_activation > ACTIVATION_BUDGET {
        over.push("bytes per activation");
    }
    if total > TOTAL_BUDGET || resident.is_some_and(|r| r > TOTAL_BUDGET) {
        over.push("total");
    }
    if !over.is_empty() {
        eprintln!("over budget: {}", over.join(", "));
        std::process::exit(1);
    }
}
