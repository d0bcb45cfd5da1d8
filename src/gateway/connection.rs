//! One client connection: rmcp's server side over one engine session.
//!
//! `tools/list` is the plan's tool list with the engine's own tools; a call
//! of the search tool runs the session's search; a call of the call-through
//! tool, and any direct `tools/call`, goes through [`Session::call`] first,
//! so a hidden, unknown or not yet activated tool is not found whatever name
//! or path the client uses (a request without a session, and a session
//! several processes serve, reach every tool the context does not hide). Allowed calls are forwarded to the owning child
//! and their result recorded as evidence.
//!
//! MCP has no user-prompt event, so the session never sees a prompt: under
//! `activation = "per_prompt"` a connection keeps its activations until it
//! ends (a reconnect or restart starts afresh), as `sticky` does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ResultType,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Tool as McpTool,
};
use rmcp::service::{Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use crate::runtime::{CallMemory, CallOutcome, Delivery, ResultStatus, Session};
use crate::{Context, ContextError, Tool};

use super::child::{Called, error_result};
use super::{Exposure, Gateway, catalog};

/// The first protocol revision that forbids the tool list changing as a side
/// effect of requests: `list-changed` exposure falls back to call-through.
const FIXED_LIST_SINCE: ProtocolVersion = ProtocolVersion::V_2026_07_28;
/// The first revision with `structuredContent` in tool results.
const STRUCTURED_SINCE: ProtocolVersion = ProtocolVersion::V_2025_06_18;
/// The most of a client's own name the audit log keeps.
pub const CLIENT_NAME_CHARS: usize = 64;

/// A client connection's state: its session and its listed tools.
pub struct Connection {
    gateway: Arc<Gateway>,
    session: Mutex<Session>,
    /// In call exposure, the list served and the reload generation it was
    /// made at: it changes only when the policy or the registry does.
    listed: Mutex<Option<(u64, Arc<Vec<McpTool>>)>>,
    /// Whether the fall-back to call-through was reported already.
    fell_back: AtomicBool,
    /// A request that belongs to no session (over HTTP): calls are decided
    /// without memory and nothing outlives the request.
    stateless: bool,
    /// A session that other gateway processes serve too: calls are decided
    /// as [`Connection::shared`] says.
    shared: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `version` lets the server send `notifications/tools/list_changed`
/// outside of a request (versions before 2026-07-28).
pub fn notifies(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| v.as_str() < FIXED_LIST_SINCE.as_str())
}

impl Connection {
    /// A connection in `ctx`; fails on a context the policy refuses.
    pub fn new(gateway: Arc<Gateway>, ctx: Context) -> Result<Connection, ContextError> {
        let session = gateway.engine.session(ctx)?;
        Ok(Connection {
            gateway,
            session: Mutex::new(session),
            listed: Mutex::new(None),
            fell_back: AtomicBool::new(false),
            stateless: false,
            shared: false,
        })
    }

    /// A session that other gateway processes serve too (they share the
    /// session key, and a load balancer sends each request to any of
    /// them): a search activates tools in this process only, so the call
    /// after it, served by another, could not count on it. A call reaches
    /// every tool the context does not hide, as without a session; a tool
    /// the lock defers only after a search or a load through this process
    /// showed its new definition.
    pub fn shared(gateway: Arc<Gateway>, ctx: Context) -> Result<Connection, ContextError> {
        let mut connection = Connection::new(gateway, ctx)?;
        connection.shared = true;
        Ok(connection)
    }

    /// What this connection's calls are decided from.
    fn memory(&self) -> CallMemory {
        if self.stateless {
            CallMemory::None
        } else if self.shared {
            CallMemory::Shared
        } else {
            CallMemory::Session
        }
    }

    /// One request that belongs to no session, in `ctx` (docs/gateway.md): its
    /// list is the context's first turn plus the call-through tool, a search
    /// returns schemas but activates nothing beyond the request, and a call
    /// reaches any tool the context does not hide. Made per request and
    /// dropped with it.
    pub fn stateless(gateway: Arc<Gateway>, ctx: Context) -> Result<Connection, ContextError> {
        let mut connection = Connection::new(gateway, ctx)?;
        connection.stateless = true;
        lock(&connection.session).set_audit_sessionless();
        Ok(connection)
    }

    /// The context this connection's session runs in.
    pub fn context(&self) -> Context {
        lock(&self.session).context().clone()
    }

    /// Moves the session to `ctx` when it differs (a caller's context that
    /// a reload of the clients file changed), as a mode switch does; on a
    /// context the policy refuses the session keeps its own.
    pub fn set_context(&self, ctx: Context) -> Result<(), ContextError> {
        let mut session = lock(&self.session);
        if *session.context() == ctx {
            return Ok(());
        }
        session.set_context(&self.gateway.engine, ctx)?;
        drop(session);
        *lock(&self.listed) = None;
        Ok(())
    }

    /// Names the caller in this connection's audit events: for a front end
    /// that knows its clients (an HTTP listener with a clients file).
    pub fn set_caller(&self, caller: Option<&str>) {
        lock(&self.session).set_audit_caller(caller);
    }

    /// Names the client program in this connection's audit events, by the
    /// name it gave (MCP's `clientInfo`), cut to [`CLIENT_NAME_CHARS`]: the
    /// name is the client's own word, and every event repeats it.
    pub fn set_client(&self, client: Option<&str>) {
        let client = client.map(|c| match c.char_indices().nth(CLIENT_NAME_CHARS) {
            Some((end, _)) => &c[..end],
            None => c,
        });
        lock(&self.session).set_audit_client(client);
    }

    /// The exposure this connection serves on `version`.
    fn exposure(&self, version: Option<&ProtocolVersion>) -> Exposure {
        if self.stateless {
            // Nothing a request activates outlives it: there is nothing to
            // append to a list.
            return Exposure::Call;
        }
        match self.gateway.options.exposure {
            Exposure::ListChanged if !notifies(version) => {
                if !self.fell_back.swap(true, Ordering::Relaxed) {
                    log!(
                        "note: the client speaks protocol {}, where the tool list may not change \
                         as a side effect of requests: serving `call` exposure (activated tools \
                         are reached through `{}`)",
                        version.map_or("(unknown)", |v| v.as_str()),
                        self.gateway.options.call_tool
                    );
                }
                Exposure::Call
            }
            e => e,
        }
    }

    fn delivery(&self, exposure: Exposure) -> Delivery<'_> {
        match exposure {
            Exposure::Call => Delivery::CallThrough(&self.gateway.options.call_tool),
            Exposure::ListChanged => Delivery::Declared,
        }
    }

    /// The tools to list: in call exposure the first turn's list, fixed until
    /// a reload; in list-changed exposure the session's current list.
    fn tools(&self, exposure: Exposure) -> Result<Arc<Vec<McpTool>>, String> {
        let engine = &self.gateway.engine;
        let delivery = self.delivery(exposure);
        if exposure == Exposure::ListChanged {
            let plan = lock(&self.session)
                .plan(engine)
                .map_err(|e| e.to_string())?;
            return Ok(Arc::new(to_mcp_list(&plan.tool_list(delivery))));
        }
        let generation = *self.gateway.generation().borrow();
        let mut listed = lock(&self.listed);
        if let Some((g, tools)) = &*listed
            && *g == generation
        {
            return Ok(Arc::clone(tools));
        }
        let ctx = lock(&self.session).context().clone();
        let tools = self.gateway.lists.get_or_make(generation, &ctx, || {
            let fresh = engine.session(ctx.clone()).map_err(|e| e.to_string())?;
            let plan = fresh.peek_plan(engine).map_err(|e| e.to_string())?;
            Ok(to_mcp_list(&plan.tool_list(delivery)))
        })?;
        // The audit log's `list`, as this connection's session.
        let _ = lock(&self.session).plan(engine);
        *listed = Some((generation, Arc::clone(&tools)));
        Ok(tools)
    }

    /// Which of the engine's own tools `name` is, if any.
    fn own_tool(&self, name: &str, exposure: Exposure) -> Result<Option<Own>, String> {
        let engine = &self.gateway.engine;
        let plan = lock(&self.session)
            .peek_plan(engine)
            .map_err(|e| e.to_string())?;
        let own = plan.own_tools(self.delivery(exposure));
        if !own.iter().any(|t| t.name == name) {
            return Ok(None);
        }
        Ok(Some(if plan.search_tool_name() == Some(name) {
            Own::Search
        } else {
            Own::CallThrough
        }))
    }

    async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        version: Option<&ProtocolVersion>,
        peer: &Peer<RoleServer>,
    ) -> CallToolResult {
        let exposure = self.exposure(version);
        let own = match self.own_tool(name, exposure) {
            Ok(own) => own,
            Err(e) => return error_result(e),
        };
        match own {
            Some(Own::Search) => self.search(arguments, exposure, peer).await,
            Some(Own::CallThrough) => {
                let args = arguments.unwrap_or_default();
                let Some(inner) = args.get("name").and_then(Value::as_str) else {
                    return error_result(format!(
                        "`{name}` needs `name`, the tool to call, as a string"
                    ));
                };
                let inner_args = match args.get("arguments") {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(o)) => Some(o.clone()),
                    Some(_) => {
                        return error_result(format!("`{name}`: `arguments` must be an object"));
                    }
                };
                self.forward(inner, inner_args, exposure, peer).await
            }
            None => self.forward(name, arguments, exposure, peer).await,
        }
    }

    async fn search(
        &self,
        arguments: Option<JsonObject>,
        exposure: Exposure,
        peer: &Peer<RoleServer>,
    ) -> CallToolResult {
        self.gateway.poke();
        let args = arguments.unwrap_or_default();
        let query = match args.get("query") {
            None | Some(Value::Null) => "",
            Some(Value::String(q)) => q.as_str(),
            Some(_) => return error_result("`query` must be a string".into()),
        };
        let names: Vec<&str> = match args.get("names") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => {
                a.iter().filter_map(Value::as_str).collect()
            }
            Some(_) => return error_result("`names` must be an array of strings".into()),
        };
        let found = lock(&self.session).search_for(
            &self.gateway.engine,
            query,
            &names,
            ResultStatus::Ok,
            self.delivery(exposure),
        );
        match found {
            Ok(r) => {
                if !r.activated.is_empty() && exposure == Exposure::ListChanged {
                    let _ = peer.notify_tool_list_changed().await;
                }
                CallToolResult::success(vec![ContentBlock::text(r.text)])
            }
            Err(e) => error_result(e.to_string()),
        }
    }

    /// The result text of a call that is not forwarded. A request without
    /// a session cannot search first and call after, so a tool the lock
    /// defers is never called there: the text says where it can be.
    fn refusal_text(&self, outcome: CallOutcome, name: &str) -> String {
        if self.stateless && outcome == CallOutcome::Unread {
            return format!(
                "Tool `{}` not found: its definition changed, and a request without a session \
                 cannot read the new one before calling it. Call it in a session, after a \
                 search or a load there has shown it.",
                crate::runtime::catalog::sanitize(name)
            );
        }
        outcome
            .not_found_text(name)
            .unwrap_or_else(|| format!("Tool `{}` not found.", crate::chars::escape(name)))
    }

    /// A call of a registry tool: the session decides, the child answers.
    async fn forward(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        exposure: Exposure,
        peer: &Peer<RoleServer>,
    ) -> CallToolResult {
        let engine = &self.gateway.engine;
        let outcome = match self.memory() {
            CallMemory::None => lock(&self.session).call_without_memory(engine, name),
            CallMemory::Shared => lock(&self.session).call_shared(engine, name),
            CallMemory::Session => lock(&self.session).call(engine, name),
        };
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => return error_result(e.to_string()),
        };
        let route = match outcome {
            CallOutcome::Allowed => self.gateway.route(name),
            CallOutcome::NotFound { .. } | CallOutcome::Unread => None,
        };
        let Some((child, tool)) = route else {
            if outcome
                == (CallOutcome::NotFound {
                    declared_next_step: true,
                })
                && exposure == Exposure::ListChanged
            {
                let _ = peer.notify_tool_list_changed().await;
            }
            return error_result(self.refusal_text(outcome, name));
        };
        // Decided again once the server is reached: one that this call
        // started again was listed, and held to the lock, on the way.
        let admit = || match lock(&self.session).confirm_call(engine, name, self.memory()) {
            Ok(CallOutcome::Allowed) => None,
            Ok(outcome) => Some(error_result(self.refusal_text(outcome, name))),
            Err(e) => Some(error_result(e.to_string())),
        };
        let started = std::time::Instant::now();
        let called = child
            .call(&tool, arguments, self.gateway.options.call_timeout, &admit)
            .await;
        let result = match called {
            Called::Answered(result) => result,
            Called::Refused(result) => return result,
        };
        let status = if result.is_error == Some(true) {
            ResultStatus::Error
        } else {
            ResultStatus::Ok
        };
        let forwarded = crate::audit::Forwarded {
            server: Some(child.name().to_string()),
            ms: Some(started.elapsed().as_secs_f64() * 1000.0),
            is_error: Some(result.is_error == Some(true)),
        };
        let _ = lock(&self.session).record_forwarded(engine, name, status, Some(forwarded));
        result
    }
}

/// The first turn's tool lists of call exposure, one per context, shared
/// by every connection in that context: with a large registry, a list per
/// connection was most of an idle connection's memory. A list is kept here
/// only while a connection holds it, and only for the reload generation it
/// was made at.
#[derive(Default)]
pub struct SharedLists(Mutex<Lists>);

#[derive(Default)]
struct Lists {
    generation: u64,
    by_context: HashMap<Context, Weak<Vec<McpTool>>>,
    /// The size at which lists nobody holds any more are dropped.
    prune_at: usize,
}

impl SharedLists {
    /// The list for `ctx` at `generation`: the one a connection holds, or
    /// one `make` makes.
    fn get_or_make(
        &self,
        generation: u64,
        ctx: &Context,
        make: impl FnOnce() -> Result<Vec<McpTool>, String>,
    ) -> Result<Arc<Vec<McpTool>>, String> {
        let held = |lists: &Lists| {
            (lists.generation == generation)
                .then(|| lists.by_context.get(ctx).and_then(Weak::upgrade))
                .flatten()
        };
        if let Some(list) = held(&lock(&self.0)) {
            return Ok(list);
        }
        // Made outside the lock: other contexts' lists need not wait.
        let list = Arc::new(make()?);
        let mut lists = lock(&self.0);
        if generation > lists.generation {
            lists.generation = generation;
            lists.by_context.clear();
        }
        if generation < lists.generation {
            // Made before a reload: served once, never shared.
            return Ok(list);
        }
        if let Some(theirs) = held(&lists) {
            return Ok(theirs);
        }
        if lists.by_context.len() >= lists.prune_at {
            lists.by_context.retain(|_, list| list.strong_count() > 0);
            lists.prune_at = (lists.by_context.len() * 2).max(64);
        }
        lists.by_context.insert(ctx.clone(), Arc::downgrade(&list));
        Ok(list)
    }

    /// How many lists are held by a connection.
    pub fn held(&self) -> usize {
        lock(&self.0)
            .by_context
            .values()
            .filter(|list| list.strong_count() > 0)
            .count()
    }
}

enum Own {
    Search,
    CallThrough,
}

fn to_mcp_list(tools: &[std::borrow::Cow<'_, Tool>]) -> Vec<McpTool> {
    tools
        .iter()
        .filter_map(|t| match serde_json::from_value(catalog::to_mcp(t)) {
            Ok(tool) => Some(tool),
            Err(e) => {
                log!("warning: tool `{}` left out of the list: {e}", t.name);
                None
            }
        })
        .collect()
}

/// What a result needs for a client of `version`: before 2025-06-18 there
/// is no `structuredContent`, so it is dropped, and its JSON becomes the text
/// where the child gave no other content; from 2026-07-28 on, `resultType`
/// is required, and a child of an older version sent none. (rmcp drops the
/// field itself for clients older than 2026-07-28.)
fn bridge(mut result: CallToolResult, version: Option<&ProtocolVersion>) -> CallToolResult {
    if version.is_some_and(|v| v.as_str() >= FIXED_LIST_SINCE.as_str())
        && result.result_type.is_none()
    {
        result.result_type = Some(ResultType::COMPLETE);
    }
    let old = version.is_some_and(|v| v.as_str() < STRUCTURED_SINCE.as_str());
    if old
        && let Some(structured) = result.structured_content.take()
        && result.content.is_empty()
    {
        // `take` ran before the emptiness test: the field is dropped either way.
        result
            .content
            .push(ContentBlock::text(structured.to_string()));
    }
    result
}

/// What the gateway says of itself at `initialize` and `server/discover`.
pub fn server_info() -> ServerConfig {
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build(),
    )
    .with_server_info(Implementation::new(
        "toolpolicy-gateway",
        env!("CARGO_PKG_VERSION"),
    ))
}

/// The subscription filter the gateway accepts: only the tool list changes.
pub fn subscription_filter(requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
    (requested.tools_list_changed == Some(true))
        .then(|| SubscriptionFilter::builder().tools_list_changed().build())
}

/// A `subscriptions/listen` stream: one `notifications/tools/list_changed`
/// at every policy or registry reload (never as a side effect of a
/// request), until the client cancels it.
pub async fn listen_for_reloads(gateway: &Gateway, context: SubscriptionContext) {
    let mut generation = gateway.generation();
    generation.borrow_and_update();
    loop {
        tokio::select! {
            _ = context.cancelled() => return,
            changed = generation.changed() => {
                if changed.is_err() || context.sink().notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

impl ServerHandler for Connection {
    fn get_info(&self) -> ServerConfig {
        server_info()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.gateway.poke();
        let version = context.protocol_version();
        let exposure = self.exposure(version.as_ref());
        let tools = self
            .tools(exposure)
            .map_err(|e| McpError::internal_error(e, None))?;
        Ok(ListToolsResult::with_all_items(tools.as_ref().clone()))
    }

    /// A client of 2026-07-28 or later hears of changes on a
    /// `subscriptions/listen` stream; only the tool list changes here.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        subscription_filter(requested)
    }

    /// See [`listen_for_reloads`].
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        listen_for_reloads(&self.gateway, context).await;
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let version = context.protocol_version();
        let call = self.call(
            &request.name,
            request.arguments,
            version.as_ref(),
            &context.peer,
        );
        // A call the client cancels is dropped, and the server it went to
        // is told (rmcp cancels a request whose caller has gone).
        let result = tokio::select! {
            result = call => result,
            _ = context.ct.cancelled() => {
                return Err(McpError::new(
                    rmcp::model::ErrorCode(-32800),
                    "the client cancelled the call",
                    None,
                ));
            }
        };
        Ok(CallToolResponse::Complete(bridge(result, version.as_ref())))
    }
}

/// Tells a client of a version that allows it that its tool list changed,
/// at every policy or registry reload, until the connection ends.
pub async fn tell_reloads(gateway: Arc<Gateway>, peer: Peer<RoleServer>) {
    let mut generation = gateway.generation();
    generation.borrow_and_update();
    while generation.changed().await.is_ok() {
        let version = peer.peer_info().map(|i| i.protocol_version.clone());
        if notifies(version.as_ref()) && peer.notify_tool_list_changed().await.is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection's own state beside its session and its cached list
    /// (README, "Choices": the per-connection memory).
    #[test]
    fn a_connection_is_small() {
        let inline = std::mem::size_of::<Connection>();
        eprintln!("a connection: {inline} bytes inline");
        assert!(inline <= 256, "{inline} bytes");
    }

    /// Connections in one context share one list per reload generation; a
    /// list nobody holds is not kept.
    #[test]
    fn first_lists_are_shared_per_context_and_generation() {
        let lists = SharedLists::default();
        let made = std::cell::Cell::new(0);
        let make = || {
            made.set(made.get() + 1);
            Ok(Vec::new())
        };
        let agent = Context::mode("agent");
        let chat = Context::mode("chat");
        let a = lists.get_or_make(1, &agent, make).unwrap();
        let b = lists.get_or_make(1, &agent, make).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(made.get(), 1);
        let c = lists.get_or_make(1, &chat, make).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(lists.held(), 2);
        // A reload: the next list is made afresh, and the old ones go.
        let d = lists.get_or_make(2, &agent, make).unwrap();
        assert!(!Arc::ptr_eq(&a, &d));
        assert_eq!(lists.held(), 1);
        // A list made before the reload is served but not shared.
        let stale = lists.get_or_make(1, &chat, make).unwrap();
        assert!(!Arc::ptr_eq(&stale, &c));
        assert_eq!(lists.held(), 1);
        drop(d);
        assert_eq!(lists.held(), 0);
        assert_eq!(made.get(), 4);
    }

    #[test]
    fn structured_content_is_bridged_for_older_clients() {
        let mut r = CallToolResult::success(vec![]);
        r.structured_content = Some(serde_json::json!({"a": 1}));
        let old = bridge(r.clone(), Some(&ProtocolVersion::V_2025_03_26));
        assert_eq!(old.structured_content, None);
        assert_eq!(old.content.len(), 1);
        let new = bridge(r.clone(), Some(&ProtocolVersion::V_2025_11_25));
        assert_eq!(new, r);
        r.result_type = None;
        let modern = bridge(r, Some(&ProtocolVersion::V_2026_07_28));
        assert_eq!(modern.result_type, Some(ResultType::COMPLETE));
        assert!(notifies(Some(&ProtocolVersion::V_2025_11_25)));
        assert!(!notifies(Some(&ProtocolVersion::V_2026_07_28)));
    }
}
