//! What the server knows besides the policy: the registry, the skill list
//! and the context that hover decides in. They come from the client's
//! initialization options and from a settings file, `.policy-lsp.toml`, in
//! the policy's folder or the nearest folder above it; the file's keys win
//! over the options' one by one. Paths are relative to the file that names
//! them (to the workspace root for the options).
//!
//! ```toml
//! registry = "tools.json"   # a tool registry (JSON)
//! skills = "skills.json"    # a skill list (JSON)
//! mode = "agent"            # the context hover decides in
//! bot = "reviewer"
//! flags = ["codemode"]
//! engine_tools = true       # the runtime supplies the engine's search tool
//! max_tokens = 20000        # warn about a mode whose first turn declares more
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::{Registry, SkillList};
use serde::Deserialize;

/// The settings file's name.
pub const FILE: &str = ".policy-lsp.toml";

/// The keys, as the file and the initialization options write them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub registry: Option<PathBuf>,
    pub skills: Option<PathBuf>,
    pub mode: Option<String>,
    pub bot: Option<String>,
    pub flags: Option<Vec<String>>,
    pub engine_tools: Option<bool>,
    pub max_tokens: Option<u64>,
}

impl Settings {
    /// `self`'s keys, with `base`'s where `self` has none; paths are made
    /// absolute against `dir` first.
    fn over(mut self, dir: &Path, base: &Settings) -> Settings {
        self.registry = self.registry.map(|p| dir.join(p)).or(base.registry.clone());
        self.skills = self.skills.map(|p| dir.join(p)).or(base.skills.clone());
        self.mode = self.mode.or(base.mode.clone());
        self.bot = self.bot.or(base.bot.clone());
        self.flags = self.flags.or(base.flags.clone());
        self.engine_tools = self.engine_tools.or(base.engine_tools);
        self.max_tokens = self.max_tokens.or(base.max_tokens);
        self
    }
}

/// The settings in force for one policy, with what they name loaded.
#[derive(Clone, Default)]
pub struct Config {
    pub settings: Settings,
    /// The settings file that applies, if any.
    pub file: Option<PathBuf>,
    pub registry: Option<Arc<Registry>>,
    pub skills: Option<Arc<SkillList>>,
    /// What could not be read: each becomes a diagnostic on the policy's
    /// first line, and the server goes on without it.
    pub problems: Vec<String>,
}

/// A loaded list, kept while its file's length and modification time stay.
struct Cached<T> {
    stamp: (u64, Option<SystemTime>),
    value: Result<Arc<T>, String>,
}

/// The initialization options and a cache of the lists read.
#[derive(Default)]
pub struct Store {
    options: Settings,
    root: PathBuf,
    registries: HashMap<PathBuf, Cached<Registry>>,
    skill_lists: HashMap<PathBuf, Cached<SkillList>>,
}

impl Store {
    /// `options` are the client's initialization options (`null` for none);
    /// a bad one is reported, not fatal.
    pub fn new(root: PathBuf, options: Option<&serde_json::Value>) -> (Store, Option<String>) {
        let (options, problem) = match options {
            None | Some(serde_json::Value::Null) => (Settings::default(), None),
            Some(v) => match Settings::deserialize(v) {
                Ok(s) => (s, None),
                Err(e) => (
                    Settings::default(),
                    Some(format!("initialization options ignored: {e}")),
                ),
            },
        };
        let options = options.over(&root, &Settings::default());
        let store = Store {
            options,
            root,
            ..Store::default()
        };
        (store, problem)
    }

    /// The settings for a policy at `path` (`None`: a document with no
    /// file, which gets the options alone).
    pub fn config(&mut self, path: Option<&Path>) -> Config {
        let mut problems = Vec::new();
        let file = path.and_then(|p| find_file(p.parent()?));
        let settings = match &file {
            None => self.options.clone(),
            Some(f) => match read_settings(f) {
                Ok(s) => s.over(f.parent().unwrap_or(&self.root), &self.options),
                Err(e) => {
                    problems.push(e);
                    self.options.clone()
                }
            },
        };
        let registry = settings.registry.as_deref().and_then(|p| {
            load(&mut self.registries, p, "registry", Registry::from_json)
                .map_err(|e| problems.push(e))
                .ok()
        });
        let skills = settings.skills.as_deref().and_then(|p| {
            load(&mut self.skill_lists, p, "skill list", SkillList::from_json)
                .map_err(|e| problems.push(e))
                .ok()
        });
        Config {
            settings,
            file,
            registry,
            skills,
            problems,
        }
    }
}

/// The nearest settings file at or above `dir`.
fn find_file(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().map(|d| d.join(FILE)).find(|f| f.is_file())
}

fn read_settings(path: &Path) -> Result<Settings, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("settings file `{}` cannot be read: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| {
        format!(
            "settings file `{}`: {}",
            path.display(),
            e.message().trim_end()
        )
    })
}

fn load<T, E: std::fmt::Display>(
    cache: &mut HashMap<PathBuf, Cached<T>>,
    path: &Path,
    what: &str,
    parse: impl Fn(&str) -> Result<T, E>,
) -> Result<Arc<T>, String> {
    let stamp = std::fs::metadata(path)
        .map(|m| (m.len(), m.modified().ok()))
        .map_err(|e| format!("{what} `{}` cannot be read: {e}", path.display()))?;
    if let Some(c) = cache.get(path)
        && c.stamp == stamp
    {
        return c.value.clone();
    }
    let value = std::fs::read(path)
        .map_err(|e| format!("{what} `{}` cannot be read: {e}", path.display()))
        .and_then(|bytes| {
            String::from_utf8(bytes)
                .map_err(|_| format!("{what} `{}` is not UTF-8", path.display()))
        })
        .and_then(|text| {
            parse(&text)
                .map(Arc::new)
                .map_err(|e| format!("bad {what} `{}`: {e}", path.display()))
        });
    cache.insert(
        path.to_path_buf(),
        Cached {
            stamp,
            value: value.clone(),
        },
    );
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_beside_the_policy_wins_key_by_key() {
        let dir = std::env::temp_dir().join(format!("policy-lsp-config-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(
            dir.join(FILE),
            "mode = \"chat\"\nregistry = \"missing.json\"\n",
        )
        .unwrap();
        let options = serde_json::json!({"mode": "agent", "bot": "reviewer"});
        let (mut store, problem) = Store::new(dir.clone(), Some(&options));
        assert!(problem.is_none());
        let c = store.config(Some(&dir.join("sub").join("p.policy")));
        assert_eq!(c.settings.mode.as_deref(), Some("chat"));
        assert_eq!(c.settings.bot.as_deref(), Some("reviewer"));
        assert_eq!(c.file.as_deref(), Some(dir.join(FILE).as_path()));
        // A registry that cannot be read is a problem to show, not a stop.
        assert!(c.registry.is_none());
        assert!(c.problems[0].contains("missing.json"), "{:?}", c.problems);
        std::fs::write(dir.join(FILE), "mood = 1\n").unwrap();
        let c = store.config(Some(&dir.join("p.policy")));
        assert!(c.problems[0].contains("mood"), "{:?}", c.problems);
        assert_eq!(c.settings.mode.as_deref(), Some("agent"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
