//! Who is calling, for `policy gateway --listen --clients F`: the clients
//! file maps credentials to contexts (mode, bot, flags, grants). A caller
//! shows a bearer token: a static one, named in the file by an environment
//! variable (`${NAME}`) or by its SHA-256 digest and compared in constant
//! time over digests, or a JWT access token checked against the file's
//! issuer, audience and keys, its claims mapped to the context.
//!
//! The listener asks [`Clients::authenticate`] once per request and carries
//! the [`Caller`] it gets as a value. A refusal ([`Denied`]) says no more
//! than HTTP's bearer scheme allows: whether a token was shown, never
//! whether it was close, expired or unknown; why is for the gateway's log.
//! The file is reloaded when it changes ([`Clients::watch`]); a reload that
//! fails keeps the last good one.

mod file;
mod jwt;
mod spec;

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::SystemTime;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use subtle::{ConditionallySelectable as _, ConstantTimeEq as _};

use crate::Context;

use super::servers::Problem;
pub use jwt::Timing;
use jwt::{JwksSource, Refusal};

/// The context fields a client entry (or a token's claims) sets; a field
/// left out is the command line's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub mode: Option<String>,
    pub bot: Option<String>,
    pub flags: Option<BTreeSet<String>>,
    pub grants: Option<Vec<String>>,
}

impl Overrides {
    /// `base` (the command line's context) with these fields in its place.
    /// A `grants` list is an allow-list even when it is empty: `[]` (or a
    /// token's `"scope": ""`) grants nothing, as the engine reads it. Only a
    /// field left out falls back to the command line's.
    pub fn apply(&self, base: &Context) -> Context {
        let mut c = base.clone();
        if let Some(m) = &self.mode {
            c.mode = Some(m.clone());
        }
        if let Some(b) = &self.bot {
            c.bot = Some(b.clone());
        }
        if let Some(f) = &self.flags {
            c.flags = f.clone();
        }
        if let Some(g) = &self.grants {
            c.grants = Some(g.clone());
        }
        c
    }
}

/// How a caller proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallerKind {
    /// A static token of a client in the file.
    Token,
    /// A JWT access token.
    Jwt,
}

/// Who is calling, resolved once per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The client's name in the file, or a JWT's `sub` (or the claim
    /// `jwt.claims.name` names).
    pub name: String,
    pub kind: CallerKind,
    /// The context fields this caller sets.
    pub overrides: Overrides,
}

impl Caller {
    /// The caller's context: the command line's, with the caller's fields.
    pub fn context(&self, base: &Context) -> Context {
        self.overrides.apply(base)
    }

    /// A key that names this caller alone, for limits per caller: a file's
    /// client and a JWT subject of the same name are different callers.
    pub fn key(&self) -> String {
        match self.kind {
            CallerKind::Token => format!("client:{}", self.name),
            CallerKind::Jwt => format!("jwt:{}", self.name),
        }
    }
}

/// A request refused for want of an accepted credential: HTTP 401, with the
/// header [`Denied::www_authenticate`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// Whether the request showed a credential (then `invalid_token`).
    presented: bool,
    /// Why, for the gateway's log only.
    reason: String,
}

impl Denied {
    fn missing() -> Denied {
        Denied {
            presented: false,
            reason: "no `Authorization: Bearer` header".into(),
        }
    }

    fn invalid(reason: impl Into<String>) -> Denied {
        Denied {
            presented: true,
            reason: reason.into(),
        }
    }

    /// 401.
    pub fn status(&self) -> http::StatusCode {
        http::StatusCode::UNAUTHORIZED
    }

    /// The `WWW-Authenticate` value: `Bearer resource_metadata="URL"`, and
    /// `error="invalid_token"` when a token was shown. Nothing else: not
    /// whether the token was expired, close or unknown.
    pub fn www_authenticate(&self, resource_metadata: &str) -> String {
        // A quoted-string cannot hold `"` or `\` unescaped.
        let url: String = resource_metadata
            .chars()
            .filter(|c| *c != '"' && *c != '\\' && !c.is_control())
            .collect();
        if self.presented {
            format!("Bearer resource_metadata=\"{url}\", error=\"invalid_token\"")
        } else {
            format!("Bearer resource_metadata=\"{url}\"")
        }
    }

    /// Whether the request showed a credential at all.
    pub fn presented(&self) -> bool {
        self.presented
    }

    /// Why, for the gateway's own log; never sent to the caller.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// Where RFC 9728 puts the metadata of the protected resource `resource`:
/// `/.well-known/oauth-protected-resource` inserted before its path
/// (`https://h/mcp` → `https://h/.well-known/oauth-protected-resource/mcp`).
pub fn metadata_url(resource: &str) -> Option<String> {
    let url = reqwest::Url::parse(resource).ok()?;
    let origin = super::origin::origin(resource)?;
    let path = url.path().trim_end_matches('/');
    Some(format!("{origin}{WELL_KNOWN}{path}"))
}

/// The well-known path of protected-resource metadata.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// A clients file that could not be used, with every problem in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientsError {
    pub file: PathBuf,
    pub problems: Vec<Problem>,
}

impl fmt::Display for ClientsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a valid clients file:", self.file.display())?;
        for p in &self.problems {
            write!(f, "\n{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ClientsError {}

/// Where `${NAME}` is read from.
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// One version of the file, in force.
struct Loaded {
    parsed: file::Parsed,
    /// The keys of a `jwks_url`, kept across reloads that keep the URL.
    fetched: Option<Arc<jwt::Fetched>>,
}

/// The clients file in force, reloaded in place.
pub struct Clients {
    path: PathBuf,
    env: Env,
    current: RwLock<Arc<Loaded>>,
    /// Shared with every `jwks_url` cache, this version's and the next.
    timing: Arc<Mutex<Timing>>,
    /// What a new version must pass to be put in force (see
    /// [`Clients::set_check`]).
    check: RwLock<Option<Check>>,
}

/// The problems of a version's callers (each client's and the JWT
/// defaults' context fields, as [`Clients::contexts`] gives them) that keep
/// it from being put in force: none when it may be.
pub type Check = Arc<dyn Fn(&[(String, Overrides)]) -> Vec<Problem> + Send + Sync>;

/// The callers left without a mode, each as a problem at its path in the
/// file: where the command line's context `base` names no mode and the
/// policy declares `modes`, every caller must name one (a JWT whose token
/// has no mode claim takes `jwt.defaults`' mode).
pub fn without_mode(
    contexts: &[(String, Overrides)],
    base: &Context,
    modes: &[String],
) -> Vec<Problem> {
    if base.mode.is_some() || modes.is_empty() {
        return Vec::new();
    }
    let declared: Vec<String> = modes.iter().map(|m| format!("`{m}`")).collect();
    contexts
        .iter()
        .filter(|(_, o)| o.mode.is_none())
        .map(|(at, _)| {
            let mut p = spec::problem(
                at.as_str(),
                "names no mode, and `--mode` gives none: this caller would have no context",
            );
            p.help = Some(format!(
                "the policy declares {}: give this caller a `mode`, or start the gateway with `--mode`",
                declared.join(", ")
            ));
            p
        })
        .collect()
}

impl fmt::Debug for Clients {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Clients").field("path", &self.path).finish()
    }
}

impl Clients {
    /// Reads the clients file at `path`, `${NAME}` from the environment.
    pub fn load(path: &Path) -> Result<Clients, ClientsError> {
        Clients::load_with_env(path, Arc::new(|k: &str| std::env::var(k).ok()))
    }

    /// [`Clients::load`] with the environment `${NAME}` is read from (on
    /// every reload too).
    pub fn load_with_env(path: &Path, env: Env) -> Result<Clients, ClientsError> {
        let bytes = crate::input::read(path).map_err(|e| ClientsError {
            file: path.to_path_buf(),
            problems: vec![spec::problem("", format!("cannot read it: {e}"))],
        })?;
        let timing = Arc::new(Mutex::new(Timing::default()));
        let loaded = parse(path, &bytes, &env, None, &timing)?;
        Ok(Clients {
            path: path.to_path_buf(),
            env,
            current: RwLock::new(Arc::new(loaded)),
            timing,
            check: RwLock::new(None),
        })
    }

    /// When keys fetched from a `jwks_url` are fetched again (by default
    /// after 5 minutes, at most once a minute).
    pub fn set_jwks_timing(&self, timing: Timing) {
        *self.timing.lock().unwrap_or_else(PoisonError::into_inner) = timing;
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn current(&self) -> Arc<Loaded> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What the file in force says that is not an error (a JWKS key left
    /// out), each with its JSON path.
    pub fn warnings(&self) -> Vec<Problem> {
        self.current().parsed.warnings.clone()
    }

    /// Each client's name and context fields, in file order; then the JWT
    /// defaults as `jwt.defaults` when tokens are accepted: for the
    /// listener to check each against the policy before it serves.
    pub fn contexts(&self) -> Vec<(String, Overrides)> {
        contexts_of(&self.current())
    }

    /// Makes every reload pass `check` first: a version it finds problems
    /// in is refused, and the last good one stays in force, as one that
    /// does not parse.
    pub fn set_check(&self, check: Check) {
        *self.check.write().unwrap_or_else(PoisonError::into_inner) = Some(check);
    }

    /// Whether JWT access tokens are accepted.
    pub fn accepts_jwt(&self) -> bool {
        self.current().parsed.jwt.is_some()
    }

    /// Re-reads the file. On any problem the last good version stays in
    /// force and the problems are returned (for the log).
    pub fn reload(&self) -> Result<(), ClientsError> {
        let bytes = super::reload::read_for_reload(&self.path).map_err(|why| ClientsError {
            file: self.path.clone(),
            problems: vec![spec::problem("", why)],
        })?;
        let old = self.current();
        let loaded = parse(
            &self.path,
            &bytes,
            &self.env,
            old.fetched.as_ref(),
            &self.timing,
        )?;
        let check = self
            .check
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(check) = check {
            let problems = check(&contexts_of(&loaded));
            if !problems.is_empty() {
                return Err(ClientsError {
                    file: self.path.clone(),
                    problems,
                });
            }
        }
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(loaded);
        Ok(())
    }

    /// The files a version is read from: the clients file, and its
    /// `jwks_file` if it names one; with their stamps.
    fn stamps(&self) -> Vec<Stamp> {
        let mut files = vec![self.path.clone()];
        if let Some(JwksSource::File { path, .. }) =
            self.current().parsed.jwt.as_ref().map(|j| &j.source)
        {
            files.push(path.clone());
        }
        files.iter().map(|f| stamp(f)).collect()
    }

    /// [`Clients::reload`], said on standard error, then told to `on_reload`.
    fn reload_logged(&self, on_reload: &OnReload) {
        let result = self.reload();
        match &result {
            Ok(()) => log!("note: reloaded `{}`", self.path.display()),
            Err(e) => log!("error: {e}\nerror: keeping the last good clients file"),
        }
        on_reload(&result);
    }

    /// Reloads the file (and its `jwks_file`) when it changes, once its
    /// modification time and length have held still for one poll, and on
    /// SIGHUP, until the task is dropped. Each reload's result goes to
    /// `on_reload` (for an audit event) after it is logged.
    pub async fn watch(
        self: Arc<Self>,
        on_reload: impl Fn(&Result<(), ClientsError>) + Send + Sync + 'static,
    ) {
        let on_reload: Arc<OnReload> = Arc::new(on_reload);
        let mut hangup = super::reload::hangup_signal();
        let looked = |c: Arc<Clients>| async move {
            tokio::task::spawn_blocking(move || c.stamps())
                .await
                .unwrap_or_default()
        };
        let mut last = looked(self.clone()).await;
        let mut polled = last.clone();
        let mut tick = tokio::time::interval(super::reload::POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let read = tokio::select! {
                _ = tick.tick() => {
                    let now = looked(self.clone()).await;
                    let read = now != last && now == polled;
                    polled = now;
                    read
                }
                _ = hangup_received(&mut hangup) => true,
            };
            if read {
                let (c, hook) = (self.clone(), on_reload.clone());
                let _ = tokio::task::spawn_blocking(move || c.reload_logged(&*hook)).await;
                last = looked(self.clone()).await;
                polled = last.clone();
            }
        }
    }

    /// The protected-resource metadata (RFC 9728) of `resource`, the URL
    /// clients reach the gateway's `/mcp` at, to serve at
    /// [`metadata_url`]: the authorization servers the file names, and
    /// bearer tokens in the `Authorization` header only.
    pub fn protected_resource_metadata(&self, resource: &str) -> Value {
        let current = self.current();
        let mut doc = json!({
            "resource": resource,
            "bearer_methods_supported": ["header"],
        });
        if !current.parsed.authorization_servers.is_empty() {
            doc["authorization_servers"] = json!(current.parsed.authorization_servers);
        }
        doc
    }

    /// Who is calling, from the request's `Authorization: Bearer` header.
    pub async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Caller, Denied> {
        let token = bearer(headers)?;
        let current = self.current();
        if let Some(caller) = static_token(&current.parsed, token) {
            return Ok(caller);
        }
        let Some(spec) = &current.parsed.jwt else {
            return Err(Denied::invalid("not a token of the clients file"));
        };
        if token.split('.').count() != 3 {
            return Err(Denied::invalid(
                "neither a token of the clients file nor a JWT",
            ));
        }
        let claims = match (&spec.source, &current.fetched) {
            (JwksSource::File { keys, .. }, _) => jwt::verify(token, spec, keys),
            (JwksSource::Url(_), Some(fetched)) => {
                let Some(keys) = fetched.keys(false).await else {
                    return Err(Denied::invalid("JWT: no keys fetched yet from `jwks_url`"));
                };
                match jwt::verify(token, spec, &keys) {
                    Err(Refusal::UnknownKey) => match fetched.keys(true).await {
                        Some(fresh) if !Arc::ptr_eq(&fresh, &keys) => {
                            jwt::verify(token, spec, &fresh)
                        }
                        _ => Err(Refusal::UnknownKey),
                    },
                    other => other,
                }
            }
            (JwksSource::Url(_), None) => Err(Refusal::Other("no key source".into())),
        };
        let claims = claims.map_err(|r| match r {
            Refusal::UnknownKey => Denied::invalid("JWT: no key with its `kid`"),
            Refusal::Other(why) => Denied::invalid(format!("JWT: {why}")),
        })?;
        let caller = caller_from_claims(spec, &claims)
            .map_err(|why| Denied::invalid(format!("JWT: {why}")))?;
        for missing in spec.claims.missing_once(&claims) {
            log!("warning: `{}`: {missing}", self.path.display());
        }
        Ok(caller)
    }
}

/// Each client's name and context fields in a version, in file order;
/// then the JWT defaults as `jwt.defaults` when tokens are accepted.
fn contexts_of(loaded: &Loaded) -> Vec<(String, Overrides)> {
    let mut out: Vec<(String, Overrides)> = loaded
        .parsed
        .clients
        .iter()
        .map(|(name, o)| (spec::at("clients", name), o.clone()))
        .collect();
    if let Some(j) = &loaded.parsed.jwt {
        out.push(("jwt.defaults".into(), j.defaults.clone()));
    }
    out
}

/// What [`Clients::watch`] tells of each reload.
type OnReload = dyn Fn(&Result<(), ClientsError>) + Send + Sync;

/// What identifies a version of a file without reading it.
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

async fn hangup_received(h: &mut super::reload::Hangup) {
    #[cfg(unix)]
    if let Some(s) = h {
        s.recv().await;
        return;
    }
    let _ = h;
    std::future::pending::<()>().await
}

/// Parses one version of the file; a `jwks_url` keeps `previous`'s cache
/// when it is the same URL.
fn parse(
    path: &Path,
    bytes: &[u8],
    env: &Env,
    previous: Option<&Arc<jwt::Fetched>>,
    timing: &Arc<Mutex<Timing>>,
) -> Result<Loaded, ClientsError> {
    let error = |problems| ClientsError {
        file: path.to_path_buf(),
        problems,
    };
    let text =
        std::str::from_utf8(bytes).map_err(|_| error(vec![spec::problem("", "not UTF-8 text")]))?;
    let dir = path.parent().map(PathBuf::from).unwrap_or_default();
    let parsed = file::parse(text, &dir, &**env).map_err(error)?;
    let fetched = match parsed.jwt.as_ref().map(|j| &j.source) {
        Some(JwksSource::Url(url)) => Some(match previous {
            Some(p) if p.url() == url => p.clone(),
            _ => Arc::new(jwt::Fetched::new(url.clone(), timing.clone())),
        }),
        _ => None,
    };
    Ok(Loaded { parsed, fetched })
}

/// What reading a clients file's text finds, errors then warnings (each
/// `true` when an error), as [`Clients::load`] would, without fetching
/// anything: for an editor checking a file as it is typed.
pub fn check_text(
    text: &str,
    dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<(bool, Problem)> {
    match file::parse(text, dir, env) {
        Ok(parsed) => parsed.warnings.into_iter().map(|w| (false, w)).collect(),
        Err(errors) => errors.into_iter().map(|e| (true, e)).collect(),
    }
}

/// The bearer token of the request's one `Authorization` header.
fn bearer(headers: &http::HeaderMap) -> Result<&str, Denied> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(Denied::missing());
    };
    if values.next().is_some() {
        return Err(Denied::invalid("more than one `Authorization` header"));
    }
    let value = value
        .to_str()
        .map_err(|_| Denied::invalid("an `Authorization` header that is not text"))?;
    let (scheme, token) = value.trim().split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Denied::invalid(
            "an `Authorization` header of another scheme than `Bearer`",
        ));
    }
    let token = token.trim_start_matches(' ');
    if token.is_empty() || !token.chars().all(file::is_token_char) {
        return Err(Denied::invalid(
            "a bearer token that is empty or not in the token's characters",
        ));
    }
    Ok(token)
}

/// The client whose token is `token`: its digest is compared with every
/// client's, in constant time and to the end of the list, so that neither
/// the time taken nor anything else says which client (if any) was close.
fn static_token(parsed: &file::Parsed, token: &str) -> Option<Caller> {
    let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    let mut found = subtle::Choice::from(0);
    let mut index = 0u64;
    for (d, i) in &parsed.tokens {
        let eq = d.ct_eq(&digest);
        index = u64::conditional_select(&index, &(*i as u64), eq);
        found |= eq;
    }
    if !bool::from(found) {
        return None;
    }
    let (name, overrides) = parsed.clients.get(usize::try_from(index).ok()?)?;
    Some(Caller {
        name: name.clone(),
        kind: CallerKind::Token,
        overrides: overrides.clone(),
    })
}

/// A JWT's caller: its name claim, and each context field from its claim,
/// else from `jwt.defaults`, else the command line's. A claim of the wrong
/// shape refuses the token rather than falling back.
fn caller_from_claims(spec: &jwt::JwtSpec, claims: &Value) -> Result<Caller, String> {
    let paths = &spec.claims;
    let shown = jwt::shown;
    let name = match jwt::claim(claims, &paths.name) {
        Some(Value::String(s)) if !s.trim().is_empty() && !s.chars().any(char::is_control) => {
            s.clone()
        }
        Some(_) => return Err(format!("claim {} is not a name", shown(&paths.name))),
        None => return Err(format!("no claim {}", shown(&paths.name))),
    };
    let text = |path: &Option<Vec<String>>,
                default: &Option<String>|
     -> Result<Option<String>, String> {
        let Some(path) = path else {
            return Ok(default.clone());
        };
        match jwt::claim(claims, path) {
            None | Some(Value::Null) => Ok(default.clone()),
            Some(Value::String(s)) if !s.trim().is_empty() && !s.chars().any(char::is_control) => {
                Ok(Some(s.clone()))
            }
            Some(_) => Err(format!("claim {} is not a name", shown(path))),
        }
    };
    let list = |path: &Option<Vec<String>>,
                default: Option<Vec<String>>|
     -> Result<Option<Vec<String>>, String> {
        let Some(path) = path else {
            return Ok(default);
        };
        let bad = || {
            format!(
                "claim {} is not a string or an array of strings",
                shown(path)
            )
        };
        match jwt::claim(claims, path) {
            None | Some(Value::Null) => Ok(default),
            // A space-separated string, as OAuth's `scope` is written.
            Some(Value::String(s)) => Ok(Some(s.split_whitespace().map(str::to_string).collect())),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| match v {
                    Value::String(s)
                        if !s.trim().is_empty() && !s.chars().any(char::is_control) =>
                    {
                        Ok(s.clone())
                    }
                    _ => Err(bad()),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(bad()),
        }
    };
    let d = &spec.defaults;
    Ok(Caller {
        name,
        kind: CallerKind::Jwt,
        overrides: Overrides {
            mode: text(&paths.mode, &d.mode)?,
            bot: text(&paths.bot, &d.bot)?,
            flags: list(
                &paths.flags,
                d.flags.as_ref().map(|f| f.iter().cloned().collect()),
            )?
            .map(|v| v.into_iter().collect()),
            grants: list(&paths.grants, d.grants.clone())?,
        },
    })
}
