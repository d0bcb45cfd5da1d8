//! The declared tools in each provider's request shape.
//!
//! Definitions are passed through as the registry has them (the schema
//! verbatim); only the envelope changes. Hidden tools are never rendered.

use serde_json::{Value, json};

use crate::registry::Tool;

use super::plan::Plan;

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

fn render(tool: &Tool, provider: Provider) -> Value {
    match provider {
        Provider::Generic => tool.declaration(),
        Provider::OpenAiChat => json!({"type": "function", "function": tool.declaration()}),
        Provider::OpenAiResponses => json!({
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }),
        Provider::Anthropic { .. } => json!({
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.parameters,
        }),
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
    pub fn provider_tools(&self, provider: Provider) -> Vec<Value> {
        let mut out: Vec<Value> = self.declared().map(|t| render(t, provider)).collect();
        if let Provider::Anthropic {
            native_deferral: true,
        } = provider
        {
            for tool in self.deferred() {
                let mut value = render(tool, provider);
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
