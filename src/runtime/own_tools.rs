//! The engine's own tools (docs/gateway.md): the search tool and the call-through
//! tool, defined once here so that every front end (the MCP gateway, the Node
//! binding, a Rust host) offers the model the same definitions and reads it
//! the same result texts.
//!
//! The plan itself declares registry tools only (docs/runtime.md); a front end adds
//! these with [`Plan::own_tools`], or takes the whole list in order with
//! [`Plan::tool_list`]. A registry entry of the same name wins: the engine
//! then defines nothing of that name.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use crate::registry::Tool;

use super::meter::{declaration_len, tokens_of_len};
use super::own_names::{DEFAULT_SEARCH_TOOL, Delivery};
use super::plan::Plan;

/// The longest tool name MCP allows.
pub const MAX_TOOL_NAME_CHARS: usize = 128;

/// Why `name` cannot be an MCP tool's name, if it cannot: MCP tool names
/// are 1 to [`MAX_TOOL_NAME_CHARS`] ASCII letters, digits, `_`, `-` and `.`.
/// A front end checks the names it gives the engine's own tools with it.
pub fn tool_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the name is empty".into());
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        let shown = crate::chars::escape_name(&c.to_string()).into_owned();
        return Some(format!(
            "`{}` holds `{shown}`, which a tool name cannot carry",
            crate::chars::escape_name(name)
        ));
    }
    let n = name.chars().count();
    (n > MAX_TOOL_NAME_CHARS).then(|| {
        format!(
            "`{name}` is {n} characters long, over the {MAX_TOOL_NAME_CHARS} a tool name may have"
        )
    })
}

fn own(name: &str, description: String, parameters: Value) -> Tool {
    Tool {
        name: name.to_string(),
        description,
        parameters,
        source: None,
        defer_loading: false,
        extra: Map::new(),
        ..Tool::default()
    }
}

/// The search tool's definition: what it does, how loaded tools are reached,
/// and the catalog of what it can find.
pub fn search_tool(name: &str, catalog: &str, delivery: Delivery<'_>) -> Tool {
    let mut description = String::from(
        "Find tools that are not loaded yet and load them. Say what you want to do in `query`, \
         in plain words of any language; add exact tool names in `names` if you know them. \
         Only tools that fit are loaded: when none does, the result says so and where the \
         on-demand tools are.",
    );
    match delivery {
        Delivery::Declared => {
            description.push_str(" Loaded tools can be called from your next step.")
        }
        Delivery::CallThrough(call) => {
            description.push_str(&format!(
                " Loaded tools are not added to your tool list: call them through `{call}`, \
                 with the parameters this tool's result shows."
            ));
        }
    }
    if !catalog.is_empty() {
        description.push_str("\n\n");
        description.push_str(catalog);
    }
    let parameters = json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What you want to do, in plain words."
            },
            "names": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Exact names of tools to load."
            }
        },
        "required": ["query"]
    });
    own(name, description, parameters)
}

/// The call-through tool's definition.
pub fn call_tool(name: &str) -> Tool {
    let parameters = json!({
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "description": "The tool's exact name, as the search result gave it."
            },
            "arguments": {
                "type": "object",
                "description": "The tool's arguments, as its parameters say."
            }
        },
        "required": ["name"]
    });
    own(
        name,
        "Call a tool that a search loaded, by its exact name, with its arguments. Use it for \
         every tool that is not in your tool list."
            .to_string(),
        parameters,
    )
}

/// Meter tokens of one definition (docs/runtime.md): a quarter token per character
/// of its compact `{name, description, parameters}`.
pub fn declaration_tokens(tool: &Tool) -> u64 {
    u64::from(tokens_of_len(declaration_len(tool)))
}

impl Plan {
    /// The name of the search tool the model is told about, while anything
    /// is deferred: the first name a `search` statement gives, else the first
    /// registry search tool declared, else [`DEFAULT_SEARCH_TOOL`] when the
    /// policy has no `search` statement (and the registry no tool of that
    /// name: name it in a `search` statement to make it the search tool).
    pub fn search_tool_name(&self) -> Option<&str> {
        self.base.search_name.as_deref()
    }

    fn in_registry(&self, name: &str) -> bool {
        self.snapshot.registry().index_of(name).is_some()
    }

    /// The engine's definitions a front end declares besides the plan's
    /// registry tools: the search tool where the registry does not define it,
    /// and, for [`Delivery::CallThrough`], the call-through tool where the
    /// registry does not define it. Both only while anything is deferred.
    pub fn own_tools(&self, delivery: Delivery<'_>) -> Vec<Tool> {
        let mut out = Vec::new();
        if let Some(name) = self.search_tool_name()
            && !self.in_registry(name)
        {
            out.push(search_tool(name, self.catalog(), delivery));
        }
        if let Delivery::CallThrough(call) = delivery
            && !self.base.deferred.is_empty()
            && !self.in_registry(call)
            && Some(call) != self.search_tool_name()
        {
            out.push(call_tool(call));
        }
        out
    }

    /// The whole list a front end declares, in a cache-stable order: guards,
    /// the engine's search tool, the registry's search tools, the
    /// call-through tool, active tools, then activated tools (docs/runtime.md with
    /// the engine's own tools in their places).
    pub fn tool_list(&self, delivery: Delivery<'_>) -> Vec<Cow<'_, Tool>> {
        let own = self.own_tools(delivery);
        let mut own = own.into_iter().peekable();
        let search_own = own
            .peek()
            .is_some_and(|t| Some(t.name.as_str()) == self.search_tool_name());
        let guards = self.base.guards_len;
        let discovery = guards + self.base.search_tools.len();
        let mut out = Vec::with_capacity(self.declared_len() + 2);
        for (k, tool) in self.declared().enumerate() {
            if k == guards && search_own {
                out.extend(own.next().map(Cow::Owned));
            }
            if k == discovery {
                out.extend(own.by_ref().map(Cow::Owned));
            }
            out.push(Cow::Borrowed(tool));
        }
        out.extend(own.map(Cow::Owned));
        out
    }

    /// Meter tokens of [`Plan::tool_list`]: the plan's declared tokens and
    /// the engine's own definitions.
    pub fn tool_list_tokens(&self, delivery: Delivery<'_>) -> u64 {
        self.tokens().declared
            + self
                .own_tools(delivery)
                .iter()
                .map(declaration_tokens)
                .sum::<u64>()
    }
}

/// The search tool the engine supplies in a policy's contexts, if it does:
/// the first tool name a `search` statement gives, when the front end adds
/// the engine's own tools (`front_end`) or that name is the engine's own
/// [`DEFAULT_SEARCH_TOOL`]; [`DEFAULT_SEARCH_TOOL`] for a policy without a
/// `search` statement behind such a front end. `policy check`, `measure`
/// and the gateway decide with this whether to count the engine's tools.
pub fn supplied_search_name(table: &crate::table::Table, front_end: bool) -> Option<&str> {
    match table.search_names().next() {
        Some(name) if front_end || name == DEFAULT_SEARCH_TOOL => Some(name),
        Some(_) => None,
        None if front_end && !table.has_search() => Some(DEFAULT_SEARCH_TOOL),
        None => None,
    }
}

/// The meter's note on every token figure: what it estimates, and how.
pub const TOKENS_NOTE: &str = "tokens are an estimate: characters / 4";

/// The first turn's tool tokens, counted one way by every command and front
/// end: `policy measure`, `policy gateway --dry-run` and `policy check
/// --max-tokens` agree on one policy and registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FirstTurn {
    /// What the model is given for tools: the declared registry tools and,
    /// where the engine supplies its own tools, their definitions (its
    /// search tool carries the catalog); else the catalog, which the
    /// runtime shows beside its own search tool.
    pub listed: u64,
    /// Of `listed`, the engine's own tools.
    pub own: u64,
    /// Every tool the context does not hide, declared (the baseline: the
    /// policy hides those tools whether or not anything is deferred).
    pub all_visible: u64,
    /// How many tools `all_visible` leaves out because the context hides them.
    pub hidden: usize,
    /// Every registry tool declared: the same tools with no policy at all.
    pub no_policy: u64,
}

impl FirstTurn {
    /// The share `listed` saves against `base`, in percent.
    pub fn saved(&self, base: u64) -> f64 {
        if base == 0 {
            0.0
        } else {
            100.0 * (1.0 - self.listed as f64 / base as f64)
        }
    }

    /// The figures in one line for people, with thousands separators and
    /// both baselines: `1,937 listed; 4,312 with every tool this context
    /// does not hide declared (55.1% saved; 11 hidden tools left out); 5,020
    /// with no policy (61.4% saved)`.
    pub fn human(&self) -> String {
        let n = |v: u64| crate::render::thousands(v as usize);
        let own = if self.own > 0 {
            format!(" (the engine's own tools: {})", n(self.own))
        } else {
            String::new()
        };
        let left_out = match self.hidden {
            0 => String::new(),
            1 => "; 1 hidden tool left out: the policy hides it in any case".to_string(),
            h => format!("; {h} hidden tools left out: the policy hides them in any case"),
        };
        format!(
            "{} listed{own}; {} with every tool this context does not hide declared ({}{left_out}); {} with no policy ({})",
            n(self.listed),
            n(self.all_visible),
            percent_saved(self.saved(self.all_visible)),
            n(self.no_policy),
            percent_saved(self.saved(self.no_policy)),
        )
    }
}

/// `55.1% saved`, or `12.0% more` when the list costs more than its baseline.
pub fn percent_saved(saved: f64) -> String {
    if saved < 0.0 {
        format!("{:.1}% more", -saved)
    } else {
        format!("{saved:.1}% saved")
    }
}

impl Plan {
    /// The first turn's tool tokens (see [`FirstTurn`]); `own` is how the
    /// front end delivers activated tools when it supplies the engine's own
    /// tools, `None` when the runtime brings its own search tool.
    pub fn first_turn(&self, own: Option<Delivery<'_>>) -> FirstTurn {
        let t = self.tokens();
        let (listed, own) = match own {
            Some(delivery) => {
                let own = self.tool_list_tokens(delivery) - t.declared;
                (t.declared + own, own)
            }
            None => (t.declared + t.catalog, 0),
        };
        FirstTurn {
            listed,
            own,
            all_visible: t.all_declared - t.skills,
            hidden: self.hidden().count(),
            no_policy: self
                .snapshot()
                .tools
                .tokens
                .iter()
                .map(|&k| u64::from(k))
                .sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::DEFAULT_CALL_TOOL;
    use crate::runtime::{Engine, ResultStatus};
    use crate::{Context, Policy, Registry, SkillList};

    fn engine(policy: &str) -> Engine {
        let policy = Policy::parse("p.policy", policy).unwrap();
        let registry = Registry::from_json(
            r#"[
                {"name": "guard_me", "description": "Always there."},
                {"name": "Read", "description": "Read a file. Returns its text."},
                {"name": "WebFetch", "description": "Fetch a web page. Returns markdown.",
                 "parameters": {"type": "object", "properties": {"url": {"type": "string"}}}},
                {"name": "Secret", "description": "Never shown."}
            ]"#,
        )
        .unwrap();
        Engine::new(policy, registry, SkillList::default())
    }

    fn names(list: &[Cow<'_, Tool>]) -> Vec<String> {
        list.iter().map(|t| t.name.clone()).collect()
    }

    #[test]
    fn tool_names_mcp_takes() {
        for ok in ["call_tool", "a", "x.y-z_1", &"n".repeat(128)] {
            assert_eq!(tool_name_problem(ok), None, "{ok}");
        }
        assert_eq!(tool_name_problem("").as_deref(), Some("the name is empty"));
        assert_eq!(
            tool_name_problem("a b").as_deref(),
            Some("`a b` holds ` `, which a tool name cannot carry")
        );
        let bell = tool_name_problem("call\u{7}").unwrap();
        assert!(!bell.contains('\u{7}') && bell.contains("\\u{7}"), "{bell}");
        assert!(tool_name_problem("é").is_some());
        assert!(
            tool_name_problem(&"n".repeat(129))
                .unwrap()
                .ends_with("is 129 characters long, over the 128 a tool name may have")
        );
    }

    #[test]
    fn default_search_tool_where_the_policy_has_none() {
        let e = engine("guard guard_me\nDefer(WebFetch)\nHide(Secret)\n");
        let chat = e.session(Context::default()).unwrap();
        let plan = chat.plan(&e).unwrap();
        assert_eq!(plan.search_tool_name(), Some(DEFAULT_SEARCH_TOOL));
        let list = plan.tool_list(Delivery::Declared);
        assert_eq!(names(&list), ["guard_me", "tool_search", "Read"]);
        let search = &list[1];
        assert!(search.description.contains("- WebFetch: Fetch a web page."));
        assert!(!search.description.contains("Secret"));
        assert_eq!(search.parameters["required"], json!(["query"]));
        // The description asks for what the schema requires: a query always,
        // names besides it (clients that check arguments refuse names alone).
        let words = search.description.split("\n\n").next().unwrap_or("");
        assert!(words.contains("`query`"), "{words}");
        assert!(!words.contains("or give exact tool names"), "{words}");
        assert!(words.contains("add exact tool names in `names`"), "{words}");
        assert_eq!(
            plan.tool_list_tokens(Delivery::Declared),
            list.iter().map(|t| declaration_tokens(t)).sum::<u64>()
        );
    }

    #[test]
    fn the_first_search_statement_names_it_and_a_registry_entry_wins() {
        let e = engine("search find_tools\nsearch Read\nDefer(WebFetch)\n");
        let plan = e.session(Context::default()).unwrap().plan(&e).unwrap();
        assert_eq!(plan.search_tool_name(), Some("find_tools"));
        let list = plan.tool_list(Delivery::CallThrough(DEFAULT_CALL_TOOL));
        assert_eq!(
            names(&list),
            ["find_tools", "Read", "call_tool", "guard_me", "Secret"]
        );
        // Read is in the registry: its own definition is declared, none made.
        assert_eq!(list[1].description, "Read a file. Returns its text.");
        assert!(list[0].description.contains("through `call_tool`"));
        assert_eq!(list[2].parameters["required"], json!(["name"]));
        // A registry tool of the search tool's name is its definition.
        let e = engine("search Read\nDefer(WebFetch)\n");
        let plan = e.session(Context::default()).unwrap().plan(&e).unwrap();
        assert_eq!(plan.search_tool_name(), Some("Read"));
        assert!(plan.own_tools(Delivery::Declared).is_empty());
    }

    #[test]
    fn the_first_turn_counts_the_engines_own_tools_and_both_baselines() {
        let e = engine("guard guard_me\nDefer(WebFetch)\nHide(Secret)\n");
        let plan = e.session(Context::default()).unwrap().plan(&e).unwrap();
        let t = plan.tokens();
        let delivery = Delivery::CallThrough(DEFAULT_CALL_TOOL);
        let own = plan.first_turn(Some(delivery));
        assert_eq!(own.listed, plan.tool_list_tokens(delivery));
        assert_eq!(own.own, own.listed - t.declared);
        let runtime = plan.first_turn(None);
        assert_eq!(runtime.listed, t.declared + t.catalog);
        assert_eq!(runtime.own, 0);
        // The baselines do not depend on who supplies the search tool.
        assert_eq!(own.all_visible, runtime.all_visible);
        assert_eq!(own.hidden, 1);
        let every: u64 = e
            .snapshot()
            .registry()
            .tools()
            .iter()
            .map(declaration_tokens)
            .sum();
        assert_eq!(own.no_policy, every);
        assert!(own.no_policy > own.all_visible);
        let line = own.human();
        assert!(line.contains("1 hidden tool left out"), "{line}");
        assert!(line.contains("with no policy ("), "{line}");
    }

    #[test]
    fn nothing_deferred_means_no_own_tools() {
        let e = engine("NoDefer(*)\n");
        let plan = e.session(Context::default()).unwrap().plan(&e).unwrap();
        assert_eq!(plan.search_tool_name(), None);
        assert!(
            plan.own_tools(Delivery::CallThrough("call_tool"))
                .is_empty()
        );
        assert_eq!(
            plan.tool_list(Delivery::Declared).len(),
            plan.declared_len()
        );
    }

    #[test]
    fn results_list_summaries_and_call_through_schemas() {
        let e = engine("max_activations = 1\nDefer(WebFetch, Read)\nHide(Secret)\n");
        let mut chat = e.session(Context::default()).unwrap();
        let r = chat.search(&e, "fetch a web page", &[] as &[&str]).unwrap();
        assert_eq!(r.activated, ["WebFetch"]);
        assert!(
            r.text.starts_with(
                "Loaded 1 tool, callable from your next step:\n- `WebFetch`: Fetch a web page.\n"
            ),
            "{}",
            r.text
        );
        assert!(!r.text.contains("parameters:"));
        let r = chat
            .load_for(
                &e,
                &["Read"],
                ResultStatus::Ok,
                Delivery::CallThrough("call_tool"),
            )
            .unwrap();
        assert!(
            r.text.starts_with(
                "Loaded 1 tool, call it through `call_tool` with these parameters:\n\
                 - `Read`: Read a file.\n  parameters: {\"type\":\"object\",\"properties\":{}}\n"
            ),
            "{}",
            r.text
        );
        let r = chat
            .search_for(
                &e,
                "",
                &["Secret", "Nope"],
                ResultStatus::Ok,
                Delivery::CallThrough("call_tool"),
            )
            .unwrap();
        // Unavailable names are reported alike, hidden or unknown.
        assert!(
            r.text
                .contains("Not available in this chat: `Secret`, `Nope`.")
        );
    }
}
