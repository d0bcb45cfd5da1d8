//! The memory budget of a session (docs/performance.md, "Memory"), checked exactly:
//! a session without activations takes at most 1 KiB, inline and on the heap,
//! plus at most 16 bytes per activated tool. And the budget of an idle session
//! of `policy gateway --listen` (docs/performance.md, "Many clients over HTTP"):
//! everything it keeps on the heap, rmcp's part and the gateway's.
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

fn registry(tools: usize) -> Registry {
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
    Registry::new(tools).expect("unique names")
}

fn engine(tools: usize) -> Engine {
    let registry = registry(tools);
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

/// An HTTP session that was opened, initialized and listed once, then left
/// idle, keeps less than [`HTTP_SESSION_BUDGET`] on the heap: rmcp's
/// service loop and the gateway's connection (its engine session, its
/// reload watcher, its share of the tool list), with nothing per session
/// that grows with the registry. Counted on a single-threaded runtime, so
/// every task of every session runs, allocates and frees on this thread;
/// ending the sessions gives it all back.
#[test]
fn an_idle_http_session_stays_within_its_budget() {
    use std::sync::Arc;
    use std::time::Duration;

    use bytes::Bytes;
    use http_body_util::{BodyExt as _, Full};
    use toolpolicy::gateway::listen::{Callers, ListenOptions, Listener};
    use toolpolicy::gateway::{Exposure, Gateway, Options};

    /// What one idle session may keep: 44 KiB now, in a debug build as in
    /// a release one (two of rmcp's channels are 26 KiB of it). Before the
    /// gateway had sessions of its own, boxed its handler's futures and
    /// shared its tool lists, one took 293 KiB here.
    const HTTP_SESSION_BUDGET: isize = 56 << 10;
    const WARM: usize = 20;
    const COUNTED: usize = 200;

    async fn post(
        listener: &Arc<Listener>,
        body: &str,
        session: Option<&str>,
    ) -> (Option<String>, Bytes) {
        let mut request = http::Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = session {
            request = request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        let response = listener
            .handle(request, "127.0.0.1:9".parse().unwrap())
            .await;
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        (id, response.into_body().collect().await.unwrap().to_bytes())
    }

    /// Opens a session, initializes it and lists its tools, as a client does.
    async fn open(listener: &Arc<Listener>) {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"memory","version":"1"}}}"#;
        let (id, answer) = post(listener, init, None).await;
        let id = id.unwrap_or_else(|| panic!("no session: {answer:?}"));
        post(
            listener,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Some(&id),
        )
        .await;
        let (_, listed) = post(
            listener,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            Some(&id),
        )
        .await;
        let listed = String::from_utf8_lossy(&listed);
        assert!(listed.contains("tool_99"), "{listed}");
    }

    /// Lets every task run until none has anything left to do.
    async fn settle() {
        for _ in 0..3 {
            for _ in 0..100 {
                tokio::task::yield_now().await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let options = Options {
            policy_path: "memory.policy".into(),
            context: Context::default(),
            exposure: Exposure::Call,
            call_tool: "call_tool".into(),
            call_timeout: Duration::from_secs(5),
            start_timeout: Duration::from_secs(5),
        };
        let policy = Policy::parse("memory.policy", "NoDefer(*)\n").expect("policy loads");
        let (gateway, _, _events) = Gateway::start(options, policy, Vec::new()).await;
        // A hundred tools listed in full: a copy of the list per session
        // would take more than the whole budget.
        gateway.engine.set_registry(registry(100));
        let listener = Listener::new(
            Arc::clone(&gateway),
            ListenOptions::default(),
            Callers::CommandLine(Context::default()),
        );
        // What the first sessions make once for all (the shared list, the
        // maps' first room) is not any one session's.
        for _ in 0..WARM {
            open(&listener).await;
        }
        settle().await;

        LIVE.with(|l| l.set(0));
        ON.with(|on| on.set(true));
        for _ in 0..COUNTED {
            open(&listener).await;
        }
        settle().await;
        let kept = LIVE.with(Cell::get);
        assert_eq!(listener.sessions(), WARM + COUNTED);
        assert_eq!(gateway.lists.held(), 1, "one list, shared by every session");
        let closed = listener.close_all().await;
        settle().await;
        ON.with(|on| on.set(false));
        let left = LIVE.with(Cell::get);

        let per = kept / COUNTED as isize;
        eprintln!("an idle HTTP session keeps {per} bytes on the heap");
        assert!(
            per <= HTTP_SESSION_BUDGET,
            "an idle HTTP session keeps {per} bytes (budget {HTTP_SESSION_BUDGET})"
        );
        assert_eq!(closed, WARM + COUNTED);
        // Ended sessions keep nothing (the maps keep their room).
        assert!(
            left <= (COUNTED as isize) * 64,
            "{left} bytes left after the sessions ended"
        );
    });
}
