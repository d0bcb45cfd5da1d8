//! `Session`: one chat. Every method works on the engine's current
//! snapshot, so a reload takes effect at the chat's next call.

use std::sync::Arc;

use napi::bindgen_prelude::{Object, ObjectFinalize, Unknown};
use napi::{Env, Result};
use napi_derive::napi;
use serde_json::Value;
use toolpolicy::runtime::{Delivery, parse_provider};
use toolpolicy::{Context, Plan};

use crate::args;
use crate::cache::{Builder, Cache, Key};
use crate::error;
use crate::layout;
use crate::out::{CallResult, SkillResult};

/// One chat: its context, its activations and the evidence that rebuilds
/// them. Make one with `engine.session()` or `engine.resume()`.
#[napi(custom_finalize)]
pub struct Session {
    engine: Arc<toolpolicy::Engine>,
    inner: toolpolicy::Session,
    /// The last plan and tool list handed out, as JavaScript objects.
    cache: Cache,
}

impl ObjectFinalize for Session {
    fn finalize(mut self, env: Env) -> Result<()> {
        self.cache.clear(&env)
    }
}

const PROVIDERS: &str =
    "`generic`, `openai`, `openai-responses`, `anthropic` and `anthropic-deferred`";

impl Session {
    pub fn new(
        engine: Arc<toolpolicy::Engine>,
        builder: Arc<Builder>,
        inner: toolpolicy::Session,
    ) -> Session {
        Session {
            engine,
            inner,
            cache: Cache::new(builder),
        }
    }

    fn plan_of(&self, env: &Env) -> Result<Plan> {
        self.inner
            .plan(&self.engine)
            .map_err(|e| error::context(env, &e))
    }

    /// `{status?, callThrough?}` of a search or load.
    fn delivery_options(
        env: &Env,
        options: Option<&Unknown>,
        what: &str,
    ) -> Result<(toolpolicy::runtime::ResultStatus, Option<String>)> {
        let opts = args::options(env, options, what, &["status", "callThrough"])?;
        let status = args::status(
            env,
            args::field(opts.as_ref(), "status")?.as_ref(),
            &format!("{what}.status"),
        )?;
        let call = args::call_through(
            env,
            args::field(opts.as_ref(), "callThrough")?.as_ref(),
            &format!("{what}.callThrough"),
        )?;
        Ok((status, call))
    }
}

fn delivery(call: Option<&str>) -> Delivery<'_> {
    match call {
        Some(name) => Delivery::CallThrough(name),
        None => Delivery::Declared,
    }
}

#[napi]
impl Session {
    /// This turn's plan. Throws only when the context no longer fits the
    /// policy (a mode a reload removed). While nothing changes, the same
    /// (frozen) object is returned again.
    #[napi(ts_return_type = "Readonly<PlanResult>")]
    pub fn plan<'e>(&mut self, env: &'e Env) -> Result<Object<'e>> {
        let plan = self.plan_of(env)?;
        let key = Key::new(&plan, self.inner.context(), "plan".into());
        self.cache.get(env, key, |parts| layout::plan(&plan, parts))
    }

    /// The same plan as JSON text (the `plan` contract, keys as the
    /// command line writes them), for hosts that forward it unread. While
    /// nothing changes, the same string is returned again.
    #[napi(ts_return_type = "string")]
    pub fn plan_json<'e>(&mut self, env: &'e Env) -> Result<Unknown<'e>> {
        let plan = self.plan_of(env)?;
        let key = Key::new(&plan, self.inner.context(), "planJson".into());
        self.cache.text(env, key, || {
            let mut report = serde_json::to_value(plan.report())
                .map_err(|e| error::usage(env, format!("cannot write the plan: {e}"), None))?;
            if let Value::Object(map) = &mut report {
                map.insert(
                    "declared".into(),
                    Value::Array(plan.provider_tools(toolpolicy::runtime::Provider::Generic)),
                );
            }
            Ok(report.to_string())
        })
    }

    /// The declared tools in a provider's request shape: `generic`,
    /// `openai`, `openai-responses`, `anthropic` or `anthropic-deferred`.
    /// While nothing changes, the same (frozen) list is returned again.
    #[napi(
        ts_args_type = "provider: string",
        ts_return_type = "ReadonlyArray<object>"
    )]
    pub fn provider_tools<'e>(&mut self, env: &'e Env, provider: Unknown) -> Result<Object<'e>> {
        let name = args::string(env, &provider, "provider")?;
        let Some(provider) = parse_provider(&name) else {
            let help = toolpolicy::diag::did_you_mean(
                &name,
                [
                    "generic",
                    "openai",
                    "openai-responses",
                    "anthropic",
                    "anthropic-deferred",
                ],
            )
            .unwrap_or_else(|| format!("the providers are {PROVIDERS}"));
            return Err(error::usage(
                env,
                format!("unknown provider `{name}`"),
                Some(help),
            ));
        };
        let plan = self.plan_of(env)?;
        let key = Key::new(&plan, self.inner.context(), format!("provider:{name}"));
        self.cache.get(env, key, |parts| {
            layout::provider_tools(&plan, provider, parts)
        })
    }

    /// The whole list a host declares (docs/gateway.md): the plan's tools with the
    /// engine's own search tool in its place, and with `callThrough` the
    /// call-through tool (`true` names it `call_tool`).
    #[napi(
        ts_args_type = "options?: { callThrough?: boolean | string }",
        ts_return_type = "ReadonlyArray<ToolDefinition>"
    )]
    pub fn tool_list<'e>(&mut self, env: &'e Env, options: Option<Unknown>) -> Result<Object<'e>> {
        let opts = args::options(env, options.as_ref(), "options", &["callThrough"])?;
        let call = args::call_through(
            env,
            args::field(opts.as_ref(), "callThrough")?.as_ref(),
            "options.callThrough",
        )?;
        let plan = self.plan_of(env)?;
        let view = format!("toolList:{}", call.as_deref().unwrap_or(""));
        let key = Key::new(&plan, self.inner.context(), view);
        self.cache.get(
            env,
            key,
            layout::tool_list(&plan, delivery(call.as_deref())),
        )
    }

    /// A search (docs/runtime.md): exact `names` first, then the query's matches
    /// among the deferred tools, at most `max_activations` activated.
    /// `options.status` is the search result's status as it stands in the
    /// transcript; `options.callThrough` makes the text carry each loaded
    /// tool's schema.
    #[napi(
        ts_args_type = "query: string, names?: string[], options?: { status?: ResultStatus, callThrough?: boolean | string }",
        ts_return_type = "SearchResult"
    )]
    pub fn search<'e>(
        &mut self,
        env: &'e Env,
        query: Unknown,
        names: Option<Unknown>,
        options: Option<Unknown>,
    ) -> Result<Object<'e>> {
        let query = args::string(env, &query, "query")?;
        let names = args::opt_strings(env, names.as_ref(), "names")?.unwrap_or_default();
        let (status, call) = Self::delivery_options(env, options.as_ref(), "options")?;
        let r = self
            .inner
            .search_for(
                &self.engine,
                &query,
                &names,
                status,
                delivery(call.as_deref()),
            )
            .map_err(|e| error::context(env, &e))?;
        self.cache.result(env, &self.engine.snapshot(), r)
    }

    /// A load (docs/runtime.md): activates the named deferred tools; hidden and
    /// unknown names are refused alike.
    #[napi(
        ts_args_type = "names: string[], options?: { status?: ResultStatus, callThrough?: boolean | string }",
        ts_return_type = "SearchResult"
    )]
    pub fn load<'e>(
        &mut self,
        env: &'e Env,
        names: Unknown,
        options: Option<Unknown>,
    ) -> Result<Object<'e>> {
        let names = args::strings(env, &names, "names")?;
        let (status, call) = Self::delivery_options(env, options.as_ref(), "options")?;
        let r = self
            .inner
            .load_for(&self.engine, &names, status, delivery(call.as_deref()))
            .map_err(|e| error::context(env, &e))?;
        self.cache.result(env, &self.engine.snapshot(), r)
    }

    /// The model calls a tool directly: allowed when declared; otherwise it
    /// fails as not found (a deferred tool under `on_miss = "activate"` is
    /// declared from the next step).
    #[napi(ts_args_type = "name: string")]
    pub fn call(&mut self, env: Env, name: Unknown) -> Result<CallResult> {
        let name = args::string(&env, &name, "name")?;
        let outcome = self
            .inner
            .call(&self.engine, &name)
            .map_err(|e| error::context(&env, &e))?;
        Ok(CallResult::new(outcome, &name))
    }

    /// The result of an allowed call as it stands in the transcript: a
    /// successful one is evidence that rebuilds the tool's activation.
    #[napi(ts_args_type = "name: string, status?: ResultStatus")]
    pub fn record_result(
        &mut self,
        env: Env,
        name: Unknown,
        status: Option<Unknown>,
    ) -> Result<()> {
        let name = args::string(&env, &name, "name")?;
        let status = args::status(&env, status.as_ref(), "status")?;
        self.inner
            .record_result(&self.engine, &name, status)
            .map_err(|e| error::context(&env, &e))
    }

    /// A new user prompt: under `per_prompt`, activations are rebuilt from
    /// the evidence.
    #[napi]
    pub fn prompt(&mut self, env: Env) -> Result<()> {
        self.inner
            .prompt(&self.engine)
            .map_err(|e| error::context(&env, &e))
    }

    /// Compaction: the evidence so far leaves the effective context; the
    /// next prompt rebuilds. Returns how many tools lost their evidence.
    #[napi]
    pub fn compact(&mut self) -> u32 {
        u32::try_from(self.inner.compact()).unwrap_or(u32::MAX)
    }

    /// A restart: activations are rebuilt from the evidence.
    #[napi]
    pub fn restart(&mut self, env: Env) -> Result<()> {
        self.inner
            .restart(&self.engine)
            .map_err(|e| error::context(&env, &e))
    }

    /// Switches mode (`null` for none); throws on a mode the policy does not
    /// declare and keeps the old one.
    #[napi(ts_args_type = "mode: string | null")]
    pub fn set_mode(&mut self, env: Env, mode: Option<Unknown>) -> Result<()> {
        let mode = args::opt_string(&env, mode.as_ref(), "mode")?;
        self.inner
            .set_mode(&self.engine, mode.as_deref())
            .map_err(|e| error::context(&env, &e))
    }

    /// Changes the whole context (mode, bot, flags, grants), like a mode switch.
    #[napi(ts_args_type = "context: SessionContext")]
    pub fn set_context(&mut self, env: Env, context: Unknown) -> Result<()> {
        let ctx: Context = args::context(&env, Some(&context), "context")?;
        self.inner
            .set_context(&self.engine, ctx)
            .map_err(|e| error::context(&env, &e))
    }

    /// What to persist: the context and the names with evidence. Give it to
    /// `engine.resume()` after a restart.
    #[napi(ts_return_type = "SessionState")]
    pub fn state(&self, env: Env) -> Result<Value> {
        serde_json::to_value(self.inner.state())
            .map_err(|e| error::usage(&env, format!("cannot write the state: {e}"), None))
    }

    /// Activated tools in first-activation order.
    #[napi]
    pub fn activated(&self) -> Vec<String> {
        self.inner.activated()
    }

    /// The skill tool: a listed skill's name first, its key only when no
    /// name matches, checked against the current context; `null` for a
    /// hidden or unknown skill.
    #[napi(ts_args_type = "requested: string")]
    pub fn resolve_skill(&self, env: Env, requested: Unknown) -> Result<Option<SkillResult>> {
        let requested = args::string(&env, &requested, "requested")?;
        let skill = self
            .inner
            .resolve_skill(&self.engine, &requested)
            .map_err(|e| error::context(&env, &e))?;
        Ok(skill.map(|s| SkillResult {
            name: s.name,
            key: s.key,
            description: s.description,
            source: s.source,
        }))
    }
}
