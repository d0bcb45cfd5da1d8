//! `policy gateway` (docs/gateway.md): an MCP server on standard input/output that
//! puts any MCP client behind a policy, in front of the servers the user
//! already runs.
//!
//! The pipeline, one file per step: the [`servers`] file → one [`child`] per
//! server (rmcp's client side, over [`stdio`] or `remote` HTTP, its errors
//! put in words by `messages`) → their tools as one registry ([`catalog`]) in
//! the shared [`Engine`] → one [`connection`] per client (rmcp's server side,
//! one engine session each) → [`reload`] of the policy when its file changes.
//! The engine decides everything; this module only translates MCP to engine
//! calls and back. It is the only place tokio and rmcp are used, behind the
//! `gateway` feature.

/// `eprintln!` while the gateway serves: queued for a thread of its own, so
/// that a standard error nobody reads never stops the gateway (see [`log`]).
macro_rules! log {
    ($($arg:tt)*) => {
        $crate::gateway::log::line(format!($($arg)*))
    };
}

mod body;
pub mod catalog;
pub mod child;
pub mod clients;
pub mod connection;
pub mod dry_run;
pub mod expand;
pub mod health;
pub mod listen;
pub mod log;
mod messages;
pub mod origin;
pub mod reload;
mod remote;
pub mod servers;
pub mod session_id;
pub mod sessions;
pub mod stdio;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::runtime::Engine;
use crate::settings::Unlocked;
use crate::{Context, Policy, SkillList};

use catalog::Route;
use child::{Child, Event};
use servers::ServerSpec;

/// The least time between two listings of the servers' tools after their
/// `tools/list_changed` (see [`Gateway::follow`]).
pub const RELIST_PAUSE: Duration = Duration::from_millis(100);

/// How a connection hands the model the tools a search activates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Exposure {
    /// The listed tools never change during a connection; activated tools
    /// are reached through the call-through tool.
    #[default]
    Call,
    /// Activated tools are appended to the list and the client is told with
    /// `notifications/tools/list_changed`, on protocol versions that allow it.
    ListChanged,
}

/// What the command line sets.
#[derive(Debug, Clone)]
pub struct Options {
    /// The policy file, re-read when it changes.
    pub policy_path: PathBuf,
    pub context: Context,
    pub exposure: Exposure,
    /// The call-through tool's name.
    pub call_tool: String,
    /// How long one forwarded call may take.
    pub call_timeout: Duration,
    /// How long a child may take to start and list its tools.
    pub start_timeout: Duration,
}

/// The shared state of a running gateway: the engine, the children, and the
/// routes from registry names back to them.
pub struct Gateway {
    pub options: Options,
    pub engine: Engine,
    pub children: Vec<Arc<Child>>,
    /// Each child's last tool list, in servers-file order.
    tools: Mutex<Vec<Vec<Value>>>,
    routes: RwLock<Arc<HashMap<String, Route>>>,
    /// Bumped at every policy or registry reload; connections watch it to
    /// refresh their list and tell their client.
    generation: watch::Sender<u64>,
    /// The last lint findings written, so that a re-listing that changes
    /// nothing they say does not repeat them.
    last_lints: Arc<Mutex<String>>,
    /// What else a reloaded policy must serve besides the command line's
    /// context (the HTTP listener's callers), see [`Gateway::set_reload_check`].
    reload_check: Mutex<Option<ReloadCheck>>,
    /// The contexts of the callers a clients file names, when the gateway
    /// serves one (see [`Gateway::serve_callers`]).
    callers: Mutex<Option<CallerContexts>>,
    /// The first turn's tool lists, shared by the connections in each context.
    pub lists: connection::SharedLists,
}

/// Why a policy just put in force cannot serve a context it must: one line
/// each, none when it can. The engine holds the new policy while it runs.
pub type ReloadCheck = Arc<dyn Fn(&Engine) -> Vec<String> + Send + Sync>;

/// The contexts of the callers a clients file names now, in file order.
pub type CallerContexts = Arc<dyn Fn() -> Vec<Context> + Send + Sync>;

/// Each child's start result, in servers-file order.
pub type StartReport = Vec<Result<usize, String>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Gateway {
    /// Makes every policy reload check more contexts than the command
    /// line's: a reload that cannot serve one of them keeps the last good
    /// policy, as one that cannot serve the command line's context does.
    pub fn set_reload_check(&self, check: ReloadCheck) {
        *lock(&self.reload_check) = Some(check);
    }

    /// Makes the gateway serve the callers of a clients file: their
    /// contexts are what its own checks (the search and call-through
    /// tools' names, a changed tool's fate under the lock) are made in.
    /// Where the command line names no mode, its context is only the base
    /// of theirs, and no longer a context of its own.
    pub fn serve_callers(&self, contexts: CallerContexts) {
        *lock(&self.callers) = Some(contexts);
    }

    /// Whether the command line's context is served as it is: it is not
    /// where a clients file's callers are served and it names no mode
    /// (each caller then names its own).
    pub fn serves_base(&self) -> bool {
        self.options.context.mode.is_some() || lock(&self.callers).is_none()
    }

    /// Every context the gateway serves: the command line's (unless it is
    /// only a base, see [`Gateway::serves_base`]), then the callers'.
    pub fn contexts(&self) -> Vec<Context> {
        let callers = lock(&self.callers).clone();
        let mut out = Vec::new();
        if self.serves_base() {
            out.push(self.options.context.clone());
        }
        if let Some(callers) = callers {
            for c in callers() {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        out
    }

    /// The context a check that needs one context is made in: the first
    /// of [`Gateway::contexts`].
    fn first_context(&self) -> Context {
        self.contexts()
            .into_iter()
            .next()
            .unwrap_or_else(|| self.options.context.clone())
    }

    /// [`Gateway::set_reload_check`]'s check of the engine's policy.
    pub(crate) fn reload_refusals(&self) -> Vec<String> {
        let check = lock(&self.reload_check).clone();
        check.map(|check| check(&self.engine)).unwrap_or_default()
    }

    /// Starts every child at once and builds the registry from those that
    /// came up; a child that did not is reported and retried on demand.
    pub async fn start(
        options: Options,
        policy: Policy,
        servers: Vec<ServerSpec>,
    ) -> (Arc<Gateway>, StartReport, mpsc::UnboundedReceiver<Event>) {
        let started = Started::start(servers, options.start_timeout).await;
        let gateway = Arc::new(Gateway {
            options,
            engine: Engine::new(policy, Default::default(), SkillList::default()),
            children: started.children,
            tools: Mutex::new(started.tools),
            routes: RwLock::new(Arc::default()),
            generation: watch::channel(0).0,
            last_lints: Arc::default(),
            reload_check: Mutex::new(None),
            callers: Mutex::new(None),
            lists: connection::SharedLists::default(),
        });
        gateway.rebuild();
        for child in &gateway.children {
            let gateway = Arc::downgrade(&gateway);
            child.on_listed(Box::new(move |index, listed| {
                if let Some(gateway) = gateway.upgrade() {
                    gateway.install(index, listed);
                }
            }));
        }
        (gateway, started.report, started.events)
    }

    /// Rebuilds the registry from the children's last tool lists and hands
    /// it to the engine; sessions keep their activations by name.
    fn rebuild(&self) {
        let tools = lock(&self.tools);
        let built = catalog::build(
            self.children
                .iter()
                .zip(tools.iter())
                .map(|(c, t)| (c.name(), t.as_slice())),
        );
        drop(tools);
        for w in &built.warnings {
            log!("warning: {w}");
        }
        for w in built.registry.warnings() {
            log!("warning: {w}");
        }
        if built.registry.index_of(&self.options.call_tool).is_some() {
            log!(
                "warning: a server tool is named `{}`, as the call-through tool: the model reaches deferred tools through the server's",
                self.options.call_tool
            );
        }
        let before = self.engine.snapshot();
        // Marked against the policy's lock here: an unlocked tool follows
        // `unlocked` from the next request on.
        self.engine.set_registry(built.registry);
        let routes = Arc::new(built.routes);
        let old_routes = std::mem::replace(
            &mut *self.routes.write().unwrap_or_else(PoisonError::into_inner),
            Arc::clone(&routes),
        );
        self.report_changes(&before, &self.engine.snapshot(), &old_routes, &routes);
        self.engine.emit(crate::audit::EventKind::Reload {
            what: "registry".into(),
            ok: true,
            codes: Vec::new(),
        });
        self.bump();
    }

    /// Names on standard error every tool whose definition differs from
    /// the one served until now, with the fields that changed (the model
    /// may hold the old schema from a search result), and every tool a
    /// server added after start; with a lock, each says what becomes of it.
    /// A change is a `drift` event too.
    fn report_changes(
        &self,
        before: &crate::runtime::Snapshot,
        after: &crate::runtime::Snapshot,
        old_routes: &HashMap<String, Route>,
        routes: &HashMap<String, Route>,
    ) {
        let server_of = |name: &str| {
            routes
                .get(name)
                .and_then(|r| self.children.get(r.server))
                .map_or("?", |c| c.name())
        };
        let lock = after
            .policy()
            .lock
            .as_ref()
            .map(|setting| setting.file.clone());
        let unlocked = after
            .table()
            .resolve(&self.first_context())
            .map(|r| r.settings().unlocked)
            .unwrap_or_default();
        let held = |tool: &crate::registry::Tool| lock_words(lock.is_some(), tool, unlocked);
        // A tool is added after start when its server had listed tools
        // before: a server that comes up late, or again, adds none.
        let listed_before: std::collections::HashSet<usize> =
            old_routes.values().map(|r| r.server).collect();
        for tool in after.registry().tools() {
            let Some(route) = routes.get(&tool.name) else {
                continue;
            };
            if listed_before.contains(&route.server) && before.registry().get(&tool.name).is_none()
            {
                log!(
                    "note: server `{}`: tool `{}` added after start{}",
                    server_of(&tool.name),
                    crate::chars::escape_name(&tool.name),
                    held(tool)
                );
            }
        }
        for (tool, fields) in crate::registry::changed_tools(before.registry(), after.registry()) {
            let fields: Vec<&str> = fields.iter().map(|f| f.as_str()).collect();
            log!(
                "warning: server `{}`: tool `{}` changed after start: {}{}",
                server_of(&tool.name),
                crate::chars::escape_name(&tool.name),
                fields.join(", "),
                held(tool)
            );
            // Whether the change is held against a definition the lock
            // approved.
            let locked = lock
                .as_ref()
                .is_some_and(|file| file.as_ref().is_some_and(|f| f.get(&tool.name).is_some()));
            self.engine.emit(crate::audit::EventKind::Drift {
                tool: tool.name.clone(),
                fields: fields.iter().map(|f| f.to_string()).collect(),
                locked,
            });
        }
    }

    /// The search tool's names in the contexts the gateway serves, where
    /// anything is deferred; each once.
    fn search_tool_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for ctx in self.contexts() {
            let name = self
                .engine
                .session(ctx)
                .ok()
                .and_then(|s| s.plan(&self.engine).ok())
                .and_then(|p| p.search_tool_name().map(str::to_string));
            if let Some(name) = name
                && !names.contains(&name)
            {
                names.push(name);
            }
        }
        names
    }

    /// Why the engine's own search tool cannot be served under its name, if
    /// it cannot: the policy's `search` statement gives a name MCP refuses,
    /// or the call-through tool's. A registry tool of that name is served
    /// as it is.
    pub fn search_tool_problem(&self) -> Option<String> {
        let registry = self.engine.snapshot();
        self.search_tool_names().into_iter().find_map(|name| {
            if registry.registry().index_of(&name).is_some() {
                return None;
            }
            if let Some(why) = crate::runtime::tool_name_problem(&name) {
                return Some(format!(
                    "the search tool's name, from the policy's `search` statement, is not a valid MCP tool name: {why}"
                ));
            }
            let call = &self.options.call_tool;
            (name == *call).then(|| {
                format!("`--call-tool` `{call}` is the search tool's name: choose another")
            })
        })
    }

    /// Why the call-through tool's name is taken, if it is: it is the
    /// search tool's name (the default one, or the one the policy gives in
    /// this context) or a server tool's. The call-through tool would then
    /// not be listed, while search results still send the model to it.
    pub fn call_tool_taken(&self) -> Option<String> {
        let call = &self.options.call_tool;
        if call == crate::runtime::DEFAULT_SEARCH_TOOL || self.search_tool_names().contains(call) {
            return Some(format!(
                "`--call-tool` `{call}` is the search tool's name: choose another"
            ));
        }
        if self.engine.snapshot().registry().index_of(call).is_some() {
            let server = self.route(call).map(|(c, _)| c.name().to_string());
            return Some(match server {
                Some(server) => format!(
                    "`--call-tool` `{call}` is the name of a tool of server `{server}`: choose another"
                ),
                None => format!("`--call-tool` `{call}` is a server tool's name: choose another"),
            });
        }
        None
    }

    /// Writes the policy's lints against the live registry to standard
    /// error (what `policy check --registry` finds, the engine's own search
    /// tool counted as supplied), and a closing line that says how many, or
    /// that there are none. With `again` false, findings the same as the
    /// last written are not repeated. The lints run on a blocking thread of
    /// their own, so that a registry of thousands of tools never holds up
    /// serving; the dry run waits for the returned task.
    pub fn lint(&self, again: bool) -> tokio::task::JoinHandle<()> {
        let snap = self.engine.snapshot();
        // A server that is down lists nothing: rules naming its tools then
        // match nothing, for now.
        let empty: Vec<String> = {
            let tools = lock(&self.tools);
            self.children
                .iter()
                .zip(tools.iter())
                .filter(|(_, t)| t.is_empty())
                .map(|(c, _)| format!("`{}`", c.name()))
                .collect()
        };
        let last = Arc::clone(&self.last_lints);
        tokio::task::spawn_blocking(move || {
            let text = lint_text(&snap, &empty);
            let mut last = lock(&last);
            if !again && *last == text {
                return;
            }
            for line in text.lines() {
                log!("{line}");
            }
            *last = text;
        })
    }

    /// Tells every connection that the policy or the registry changed.
    pub fn bump(&self) {
        self.generation.send_modify(|g| *g += 1);
    }

    /// The current reload generation and a receiver to wait for the next.
    pub fn generation(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// The child and its own tool name for a registry name.
    pub fn route(&self, name: &str) -> Option<(Arc<Child>, String)> {
        let routes = Arc::clone(&self.routes.read().unwrap_or_else(PoisonError::into_inner));
        let route = routes.get(name)?;
        let child = self.children.get(route.server)?;
        Some((Arc::clone(child), route.tool.clone()))
    }

    /// Re-lists one child and, when its tools changed, reloads the registry.
    pub async fn relist(&self, index: usize) {
        let Some(child) = self.children.get(index) else {
            return;
        };
        match child.list_tools().await {
            Ok(listed) => self.install(index, listed),
            Err(e) => log!("warning: {e}"),
        }
    }

    /// Puts child `index`'s new listing in the registry, marked against the
    /// lock, when it differs from the last: what a re-listing does, and
    /// what a child started again on demand does before any call reaches
    /// it. A listing the same as the last changes nothing and tells
    /// nobody: no rebuild, no `tools/list_changed` to clients.
    fn install(&self, index: usize, listed: Vec<Value>) {
        match lock(&self.tools).get_mut(index) {
            Some(slot) if *slot != listed => *slot = listed,
            _ => return,
        }
        self.rebuild();
        drop(self.lint(false));
    }

    /// Follows the children's events until every sender is gone. A change
    /// is answered at once; the events that arrive while it is listed, and
    /// for [`RELIST_PAUSE`] after, are answered together, each child listed
    /// once: a server that announces a change a thousand times in a row is
    /// listed a few times, not a thousand.
    pub async fn follow(self: Arc<Self>, mut events: mpsc::UnboundedReceiver<Event>) {
        let mut due = std::collections::BTreeSet::new();
        while let Some(Event::ToolsChanged(i)) = events.recv().await {
            due.insert(i);
            while let Ok(Event::ToolsChanged(i)) = events.try_recv() {
                due.insert(i);
            }
            while let Some(i) = due.pop_first() {
                self.relist(i).await;
            }
            tokio::time::sleep(RELIST_PAUSE).await;
        }
    }

    /// Tries, in the background, to restart children whose back-off has run
    /// out: a child that failed at start has no tools to call, so listing
    /// and searching are what bring it back.
    pub fn poke(self: &Arc<Self>) {
        for child in &self.children {
            let child = Arc::clone(child);
            tokio::spawn(async move { child.revive_if_due().await });
        }
    }

    /// Stops every child, side by side, and waits until they have stopped.
    pub async fn stop(&self) {
        stop_all(&self.children).await;
    }
}

/// What a lock makes of a tool that changed or was added, for its line on
/// standard error: nothing without a lock.
fn lock_words(has_lock: bool, tool: &crate::registry::Tool, unlocked: Unlocked) -> &'static str {
    match (has_lock, tool.unlocked, unlocked) {
        (false, ..) => "",
        (true, false, _) => "; the lock holds it",
        (true, true, Unlocked::Hide) => {
            "; the lock does not hold it: hidden from the next request on"
        }
        (true, true, Unlocked::Defer) => {
            "; the lock does not hold it: deferred from the next request on"
        }
        (true, true, Unlocked::Allow) => {
            "; the lock does not hold it: served anyway (`unlocked = \"allow\"`)"
        }
    }
}

/// The lints of a snapshot's policy against its registry, one line each,
/// and the closing line; `empty` names the servers that list no tools.
fn lint_text(snap: &crate::runtime::Snapshot, empty: &[String]) -> String {
    let policy = snap.policy();
    let registry = snap.registry();
    let diags = crate::lint::lint_with(
        policy,
        &crate::lint::Options {
            registry: Some(registry),
            engine_search: true,
            ..Default::default()
        },
    );
    let found = crate::render::plain(&policy.source, &diags);
    let name = crate::chars::escape(&policy.source.name).into_owned();
    let tools = registry.len();
    let counted = match diags.len() {
        0 => "none".to_string(),
        1 => "1 warning".to_string(),
        n => format!("{n} warnings"),
    };
    let mut summary =
        format!("note: lints of `{name}` against the servers' {tools} tools: {counted}");
    if !empty.is_empty() && !diags.is_empty() {
        summary += &format!(
            " (no tools listed by {}: rules naming theirs match nothing until they are)",
            empty.join(", ")
        );
    }
    format!("{found}{summary}")
}

/// The servers of a servers file, started: what the gateway serves from, and
/// what `policy registry` writes out.
pub struct Started {
    pub children: Vec<Arc<Child>>,
    /// Each child's tool list, in servers-file order (empty for a child
    /// that did not start).
    pub tools: Vec<Vec<Value>>,
    pub report: StartReport,
    pub events: mpsc::UnboundedReceiver<Event>,
}

impl Started {
    /// Starts every server at once, each within `timeout`.
    pub async fn start(servers: Vec<ServerSpec>, timeout: Duration) -> Started {
        let (events, events_rx) = mpsc::unbounded_channel();
        let children: Vec<Arc<Child>> = servers
            .into_iter()
            .enumerate()
            .map(|(i, spec)| Child::new(spec, i, timeout, events.clone()))
            .collect();
        let mut started = tokio::task::JoinSet::new();
        for (i, child) in children.iter().enumerate() {
            let child = Arc::clone(child);
            started.spawn(async move { (i, child.start().await) });
        }
        let mut tools = vec![Vec::new(); children.len()];
        let mut report: StartReport = vec![Err("not started".into()); children.len()];
        while let Some(joined) = started.join_next().await {
            if let Ok((i, result)) = joined {
                report[i] = result.map(|t| {
                    let n = t.len();
                    tools[i] = t;
                    n
                });
            }
        }
        Started {
            children,
            tools,
            report,
            events: events_rx,
        }
    }

    /// The joined registry the gateway would serve, as [`catalog::build`]
    /// makes it.
    pub fn catalog(&self) -> catalog::Catalog {
        catalog::build(
            self.children
                .iter()
                .zip(&self.tools)
                .map(|(c, t)| (c.name(), t.as_slice())),
        )
    }

    /// Stops every child, as [`Gateway::stop`] does.
    pub async fn stop(&self) {
        stop_all(&self.children).await;
    }
}

/// Stops the children side by side and waits until they have stopped.
async fn stop_all(children: &[Arc<Child>]) {
    let mut stopping = tokio::task::JoinSet::new();
    for child in children {
        let child = Arc::clone(child);
        stopping.spawn(async move { child.stop().await });
    }
    while stopping.join_next().await.is_some() {}
}
