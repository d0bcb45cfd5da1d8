//! The declared tools in each provider's request shape.
//!
//! Definitions are passed through as the registry has them (the schema and
//! every field the engine does not read, numbers verbatim); only the envelope
//! changes, and for OpenAI and Anthropic a name they would reject (see
//! [`names`]). A provider's own server tools pass through untouched. Hidden
//! tools are never rendered.

pub(super) mod names;

use serde_json::{Map, Value};

use crate::registry::Tool;

use super::plan::Plan;

pub use names::{ProviderNames, is_valid as is_valid_provider_name};

/// A provider's tool shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Provider {
    /// `{name, description, parameters}` (pi and most runtimes).
    #[default]
    Generic,
    /// OpenAI Chat Completions: `{type: "function", function: {name, description, parameters}}`.
    OpenAiChat,
    /// OpenAI Responses: `{type: "function", name, description, parameters}`.
    OpenAiResponses,
    /// Anthropic Messages: `{name, description, input_schema}`. With
    /// `native_deferral`, the deferred tools are sent too, marked
    /// `"defer_loading": true`, for the provider's own tool search.
    Anthropic { native_deferral: bool },
}

impl Provider {
    /// Whether the provider only accepts names matching `^[a-zA-Z0-9_-]{1,64}$`.
    fn restricts_names(self) -> bool {
        !matches!(self, Provider::Generic)
    }
}

/// One tool in `provider`'s shape, under the name `name`.
fn render(tool: &Tool, name: &str, provider: Provider) -> Value {
    let mut def = Map::new();
    def.insert("name".into(), Value::String(name.to_string()));
    if tool.is_server_tool() {
        if !tool.description.is_empty() {
            def.insert("description".into(), tool.description.clone().into());
        }
        def.extend(tool.extra.clone());
        return Value::Object(def);
    }
    def.insert("description".into(), tool.description.clone().into());
    let schema_key = match provider {
        Provider::Anthropic { .. } => "input_schema",
        _ => "parameters",
    };
    def.insert(schema_key.into(), tool.parameters.clone());
    def.extend(tool.extra.clone());
    match provider {
        Provider::OpenAiChat => {
            let mut wrapper = Map::new();
            wrapper.insert("type".into(), "function".into());
            wrapper.insert("function".into(), Value::Object(def));
            Value::Object(wrapper)
        }
        Provider::OpenAiResponses => {
            def.insert("type".into(), "function".into());
            Value::Object(def)
        }
        Provider::Generic | Provider::Anthropic { .. } => Value::Object(def),
    }
}

impl Plan {
    /// The `tools` array of a request in `provider`'s shape, in declared order.
    ///
    /// With Anthropic native deferral the deferred tools follow the declared
    /// ones with `"defer_loading": true`. The provider rejects a request whose
    /// tools are all deferred, so when nothing is declared the first deferred
    /// tool is sent without the mark. The catalog is still the host's to
    /// place; with native deferral it may leave it out.
    ///
    /// OpenAI and Anthropic get every tool under a name they accept: a name
    /// they would reject is sent as
    /// [`Snapshot::provider_names`](super::Snapshot::provider_names) maps it, and
    /// their calls map back with [`ProviderNames::registry_name`].
    pub fn provider_tools(&self, provider: Provider) -> Vec<Value> {
        let names = self.snapshot().provider_names();
        let name = |t: &'_ Tool| -> String {
            if provider.restricts_names() {
                names.sent(&t.name).to_string()
            } else {
                t.name.clone()
            }
        };
        let mut out: Vec<Value> = self
            .declared()
            .map(|t| render(t, &name(t), provider))
            .collect();
        if let Provider::Anthropic {
            native_deferral: true,
        } = provider
        {
            for tool in self.deferred() {
                let mut value = render(tool, &name(tool), provider);
                if !out.is_empty()
                    && let Value::Object(map) = &mut value
                {
                    map.insert("defer_loading".into(), Value::Bool(true));
                }
                out.push(value);
            }
        }
        out
    }
}

/// Parses a provider name as the command line spells it.
pub fn parse_provider(name: &str) -> Option<Provider> {
    Some(match name {
        "generic" => Provider::Generic,
        "openai" | "openai-chat" => Provider::OpenAiChat,
        "openai-responses" => Provider::OpenAiResponses,
        "anthropic" => Provider::Anthropic {
            native_deferral: false,
        },
        "anthropic-deferred" => Provider::Anthropic {
            native_deferral: true,
        },
        _ => return None,
    })
}
