//! The memory budget of a session (docs/performance.md, "Memory"), checked exactly:
//! a session without activations takes at most 1 KiB, inline and on the heap,
//! plus at most 16 bytes per activated tool.
//!
//! The heap is measured by a global allocator that counts only what the
//! measuring thread allocates while it measures, so other tests and the test
//! harness cannot disturb the figure. `examples/memory.rs` measures the same at
//! scale (100,000 sessions over 10,000 tools).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use toolpolicy::runtime::Engine;
use toolpolicy::{Context, Policy, Registry, Session, SkillList, Tool};

struct Counting;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    if ON.try_with(Cell::get).unwrap_or(false) {
        let _ = LIVE.try_with(|l| l.set(l.get() + delta));
    }
}

// SAFETY: every call is forwarded unchanged to `System`; only a thread-local
// counter (const-initialised, no destructor, never allocating) is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as `System.alloc`.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as `System.dealloc`.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as `System.realloc`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Heap bytes `f`'s result holds, counted on this thread only.
fn heap_of<T>(f: impl FnOnce() -> T) -> (T, isize) {
    LIVE.with(|l| l.set(0));
    ON.with(|on| on.set(true));
    let value = f();
    ON.with(|on| on.set(false));
    (value, LIVE.with(Cell::get))
}

fn engine(tools: usize) -> Engine {
    let tools: Vec<Tool> = (0..tools)
        .map(|i| Tool {
            name: format!("tool_{i}"),
            description: format!("Does thing number {i}. More detail."),
            parameters: serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}}),
            source: Some("mcp:bench".into()),
            defer_loading: false,
            ..Default::default()
        })
        .collect();
    let registry = Registry::new(tools).expect("unique names");
    let policy = Policy::parse(
        "memory.policy",
        "guard tool_0\nsearch tool_1\nactivation = \"per_prompt\"\nmode agent {\n  NoDefer(tool_2, tool_3)\n  Defer(*)\n}\nmode chat {\n  Defer(*)\n}\n",
    )
    .expect("policy loads");
    Engine::new(policy, registry, SkillList::default())
}

#[test]
fn a_session_fits_in_one_kib_and_an_activation_in_sixteen_bytes() {
    let engine = engine(1_000);
    let ctx = Context::mode("agent")
        .with_bot("helper")
        .with_flag("codemode");
    // The context's base plan belongs to the engine: make it before measuring.
    drop(engine.session(ctx.clone()).expect("declared mode"));

    let (bare, heap) = heap_of(|| engine.session(ctx.clone()).expect("declared mode"));
    let bare_bytes = std::mem::size_of::<Session>() as isize + heap;
    assert!(
        bare_bytes <= 1024,
        "a session without activations takes {bare_bytes} bytes"
    );

    for activations in [1usize, 4, 5, 16, 17, 64] {
        let (active, heap) = heap_of(|| {
            let mut s = engine.session(ctx.clone()).expect("declared mode");
            let names: Vec<String> = (0..activations)
                .map(|i| format!("tool_{}", 10 + i))
                .collect();
            for chunk in names.chunks(4) {
                let r = s.load(&engine, chunk).expect("load");
                assert_eq!(r.activated.len(), chunk.len());
            }
            s
        });
        let bytes = std::mem::size_of::<Session>() as isize + heap;
        let budget = 1024 + 16 * activations as isize;
        assert!(
            bytes <= budget,
            "a session with {activations} activations takes {bytes} bytes (budget {budget})"
        );
        // Past the smallest allocation (room for four), each activation costs
        // at most 16 bytes more, amortized, however many there are.
        let per = (bytes - bare_bytes) as f64 / activations as f64;
        assert!(
            activations < 4 || per <= 16.0,
            "{activations} activations take {per:.1} bytes each ({bytes} bytes in all)"
        );
        drop(active);
    }
    drop(bare);
}
