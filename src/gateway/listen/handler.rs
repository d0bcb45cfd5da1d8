//! rmcp's handler for one session or one request without a session,
//! serving each through a connection in the caller's context.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams, ServerConfig,
    SubscriptionFilter,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use super::super::Gateway;
use super::super::connection::{self, Connection};
use super::answer::lock;
use super::callers::Caller;
use super::options::SESSION_HEADER;

/// rmcp's handler for one session, or for one request without a session.
/// It learns its caller from the request (the listener put it there) and
/// serves through a [`Connection`].
pub(super) struct Handler {
    pub(super) gateway: Arc<Gateway>,
    /// The session's connection, made at its first request.
    pub(super) session: Mutex<Option<Arc<Connection>>>,
    /// The task that tells the session's client of reloads.
    pub(super) reloads: Mutex<Option<tokio::task::AbortHandle>>,
    /// Whether other processes serve this session too (the key is shared):
    /// then its calls are decided as [`Connection::shared`] says.
    pub(super) shared: bool,
}

impl Handler {
    pub(super) fn new(gateway: Arc<Gateway>, shared: bool) -> Handler {
        Handler {
            gateway,
            session: Mutex::new(None),
            reloads: Mutex::new(None),
            shared,
        }
    }

    /// The connection that serves a request: the session's (in the
    /// caller's context of now: a reload of the clients file moves it), or
    /// one made for a request without a session.
    pub(super) fn connection(
        &self,
        request: &RequestContext<RoleServer>,
    ) -> Result<Arc<Connection>, McpError> {
        let peer = &request.peer;
        // The client's own name: in each request's `_meta` from 2026-07-28
        // on, from `initialize` before. Only the name is read (rmcp's
        // `client_info()` would copy the whole of what the client sent).
        let client = request
            .meta
            .get("io.modelcontextprotocol/clientInfo")
            .and_then(|info| info.get("name"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .or_else(|| peer.peer_info().map(|i| i.client_info.name.clone()));
        let parts = request.extensions.get::<http::request::Parts>();
        let Some(caller) = parts.and_then(|p| p.extensions.get::<Caller>()) else {
            return Err(McpError::internal_error(
                "the request reached MCP without a caller",
                None,
            ));
        };
        let failed = |e: crate::ContextError| refused_context(caller, &e);
        let in_session = parts.is_some_and(|p| p.headers.contains_key(SESSION_HEADER));
        if !in_session {
            let connection =
                Connection::stateless(Arc::clone(&self.gateway), caller.context.clone())
                    .map_err(failed)?;
            connection.set_caller(caller.name.as_deref());
            connection.set_client(client.as_deref());
            return Ok(Arc::new(connection));
        }
        let mut slot = lock(&self.session);
        if let Some(connection) = &*slot {
            connection
                .set_context(caller.context.clone())
                .map_err(failed)?;
            return Ok(Arc::clone(connection));
        }
        let connection = if self.shared {
            Connection::shared(Arc::clone(&self.gateway), caller.context.clone())
        } else {
            Connection::new(Arc::clone(&self.gateway), caller.context.clone())
        };
        let connection = Arc::new(connection.map_err(failed)?);
        connection.set_caller(caller.name.as_deref());
        connection.set_client(client.as_deref());
        let task = tokio::spawn(connection::tell_reloads(
            Arc::clone(&self.gateway),
            peer.clone(),
        ));
        *lock(&self.reloads) = Some(task.abort_handle());
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }
}

/// A caller whose context the policy refuses (a token's mode the policy
/// does not declare) is told its own value, and no more: the help that
/// lists the policy's modes and flags would show other callers' ones. The
/// whole of it goes to the gateway's log.
pub(super) fn refused_context(caller: &Caller, e: &crate::ContextError) -> McpError {
    let who = caller
        .name
        .as_deref()
        .map(|n| format!(" `{}`", crate::chars::escape_name(n)))
        .unwrap_or_default();
    log!("error: the policy cannot serve the context of caller{who}: {e}");
    McpError::internal_error(
        format!(
            "the policy cannot serve this caller's context: {}",
            e.message
        ),
        None,
    )
}

impl Drop for Handler {
    fn drop(&mut self) {
        if let Some(task) = lock(&self.reloads).take() {
            task.abort();
        }
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        connection::server_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let connection = self.connection(&context)?;
        // Boxed, as every handler future here: see `call_tool`.
        Box::pin(async move { ServerHandler::list_tools(&*connection, request, context).await })
            .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let connection = self.connection(&context)?;
        // Boxed: rmcp's session task awaits the handler's request future in
        // place during the handshake, so it keeps room for the largest one
        // for as long as the session lives, and a forwarded call's is tens
        // of KiB. Boxed, it takes that room only while a call runs.
        Box::pin(async move { ServerHandler::call_tool(&*connection, request, context).await })
            .await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        connection::subscription_filter(requested)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        Box::pin(connection::listen_for_reloads(&self.gateway, context)).await;
        Ok(())
    }
}
