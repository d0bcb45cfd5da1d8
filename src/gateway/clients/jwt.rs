//! JWT access tokens: the `jwt` object of the clients file, the keys that
//! sign them (a JWKS, from a file or fetched from a URL and cached), and the
//! check of one token. The signature is checked by `jsonwebtoken`; which
//! algorithms a key accepts is decided here, from the key alone: a token's
//! header never chooses `none`, nor HMAC with a public key.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::super::servers::Problem;
use super::Overrides;
use super::spec::{self, at, problem, unknown_keys};

/// How far `exp` and `nbf` may be off: clocks differ by a little.
pub const LEEWAY: Duration = Duration::from_secs(60);
/// How long keys fetched from a URL are used before they are fetched again.
pub const REFRESH: Duration = Duration::from_secs(300);
/// The least time between two fetches (a token with an unknown `kid` asks
/// for one): nobody can make the gateway fetch without end.
pub const REFETCH_PAUSE: Duration = Duration::from_secs(60);
/// How long one fetch may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest key set read, from a file or a URL.
pub const MAX_JWKS_BYTES: usize = 1 << 20;

/// The `jwt` object.
#[derive(Debug)]
pub struct JwtSpec {
    pub issuer: String,
    pub audience: Vec<String>,
    pub source: JwksSource,
    pub claims: ClaimPaths,
    pub defaults: Overrides,
}

/// Where the keys come from.
#[derive(Debug)]
pub enum JwksSource {
    /// Read when the clients file is.
    File { path: PathBuf, keys: Arc<Keys> },
    /// Fetched when first needed, then cached.
    Url(String),
}

/// A claim path for each field of the context, and for the caller's name:
/// the member names from the top level of the claims down, each exact
/// (dots and all), so that a claim named by a URI is found.
#[derive(Debug, Default)]
pub struct ClaimPaths {
    pub name: Vec<String>,
    pub mode: Option<Vec<String>>,
    pub bot: Option<Vec<String>>,
    pub flags: Option<Vec<String>>,
    pub grants: Option<Vec<String>>,
    /// Which of `mode`, `bot`, `flags` and `grants` an accepted token has
    /// carried, or was said to be missing.
    carried: [AtomicU8; 4],
}

/// A mapped claim no accepted token has carried yet, and none was said.
const UNSEEN: u8 = 0;
/// Said once on standard error: no accepted token carried it.
const SAID: u8 = 1;
/// An accepted token carried it.
const CARRIED: u8 = 2;

impl ClaimPaths {
    /// The context fields and their paths, in the order of `carried`.
    fn fields(&self) -> [(&'static str, Option<&Vec<String>>); 4] {
        [
            ("mode", self.mode.as_ref()),
            ("bot", self.bot.as_ref()),
            ("flags", self.flags.as_ref()),
            ("grants", self.grants.as_ref()),
        ]
    }

    /// For an accepted token's `claims`: a warning for each mapped claim it
    /// lacks that no accepted token has carried, each said once. A path that
    /// names a claim the issuer writes under another name (a namespaced
    /// claim shortened, a nested one flattened) gives every caller the
    /// defaults without a word otherwise.
    pub fn missing_once(&self, claims: &Value) -> Vec<String> {
        let mut out = Vec::new();
        for ((field, path), state) in self.fields().into_iter().zip(&self.carried) {
            let Some(path) = path else { continue };
            if state.load(Ordering::Relaxed) == CARRIED {
                continue;
            }
            if !matches!(claim(claims, path), None | Some(Value::Null)) {
                state.store(CARRIED, Ordering::Relaxed);
                continue;
            }
            if state
                .compare_exchange(UNSEEN, SAID, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                out.push(format!(
                    "no token accepted so far carries the claim {} that `jwt.claims.{field}` names: \
                     such a token gets `jwt.defaults.{field}`, else the command line's; a claim is \
                     named as the issuer writes it, a namespaced one whole, a nested one as \
                     `[\"outer\", \"inner\"]` (said once)",
                    shown(path)
                ));
            }
        }
        out
    }
}

/// A claim path as the clients file writes it: `tp_mode`, or
/// `["ext", "mode"]` for a claim inside an object.
pub fn shown(path: &[String]) -> String {
    match path {
        [one] => format!("`{}`", crate::chars::escape(one)),
        _ => format!(
            "`{}`",
            crate::chars::escape(&serde_json::to_string(path).unwrap_or_default())
        ),
    }
}

/// The keys of a JWKS that can check a signature.
#[derive(Debug, Default)]
pub struct Keys {
    keys: Vec<Key>,
}

struct Key {
    kid: Option<String>,
    /// The algorithms this key checks: its `alg` if it names one, else
    /// every algorithm of its type and curve.
    algorithms: Vec<Algorithm>,
    decoding: DecodingKey,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("kid", &self.kid)
            .field("algorithms", &self.algorithms)
            .finish()
    }
}

const JWT_KEYS: [&str; 6] = [
    "issuer",
    "audience",
    "jwks_file",
    "jwks_url",
    "claims",
    "defaults",
];
const CLAIM_KEYS: [&str; 5] = ["name", "mode", "bot", "flags", "grants"];
const DEFAULT_KEYS: [&str; 4] = ["mode", "bot", "flags", "grants"];

pub fn install_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
    });
}

/// The `jwt` object; `None` with its problems in `errors`.
pub fn parse_spec(
    m: &Map<String, Value>,
    dir: &Path,
    warnings: &mut Vec<Problem>,
    errors: &mut Vec<Problem>,
) -> Option<JwtSpec> {
    install_crypto_provider();
    let before = errors.len();
    unknown_keys(m, &JWT_KEYS, "jwt", errors);
    let issuer = match m.get("issuer") {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(_) => {
            errors.push(problem(
                "jwt.issuer",
                "expected the issuer's URL, as tokens give it in `iss`",
            ));
            None
        }
        None => {
            errors.push(problem(
                "jwt",
                "missing `issuer`: the `iss` every token must carry",
            ));
            None
        }
    };
    let audience = match m.get("audience") {
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.clone()],
        Some(Value::Array(a)) if !a.is_empty() => {
            let mut out = Vec::new();
            for (i, v) in a.iter().enumerate() {
                match v {
                    Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
                    _ => errors.push(problem(format!("jwt.audience[{i}]"), "expected a string")),
                }
            }
            out
        }
        Some(_) => {
            errors.push(problem(
                "jwt.audience",
                "expected a string, or an array of strings",
            ));
            Vec::new()
        }
        None => {
            errors.push(problem(
                "jwt",
                "missing `audience`: the `aud` a token must carry to be meant for this gateway",
            ));
            Vec::new()
        }
    };
    let source = match (m.get("jwks_file"), m.get("jwks_url")) {
        (Some(_), Some(_)) => {
            errors.push(problem(
                "jwt",
                "both `jwks_file` and `jwks_url` are given: keep one",
            ));
            None
        }
        (None, None) => {
            errors.push(Problem {
                path: "jwt".into(),
                message: "missing `jwks_file` (or `jwks_url`): the keys that sign the tokens".into(),
                help: Some("`jwks_file` names a JSON Web Key Set file; `jwks_url` the issuer's `https` URL for it".into()),
            });
            None
        }
        (Some(Value::String(f)), None) if !f.trim().is_empty() => {
            let path = spec::resolve(dir, f);
            match read_keys(&path) {
                Ok((keys, notes)) => {
                    warnings.extend(notes.into_iter().map(|n| problem("jwt.jwks_file", n)));
                    Some(JwksSource::File {
                        path,
                        keys: Arc::new(keys),
                    })
                }
                Err(why) => {
                    errors.push(problem("jwt.jwks_file", why));
                    None
                }
            }
        }
        (Some(_), None) => {
            errors.push(problem("jwt.jwks_file", "expected a file name"));
            None
        }
        (None, Some(Value::String(u))) => match spec::url_problem(u, true) {
            None => Some(JwksSource::Url(u.trim().to_string())),
            Some(why) => {
                errors.push(problem("jwt.jwks_url", why));
                None
            }
        },
        (None, Some(_)) => {
            errors.push(problem("jwt.jwks_url", "expected an `https` URL"));
            None
        }
    };
    let claims = claim_paths(m.get("claims"), errors);
    let defaults = match m.get("defaults") {
        None => Overrides::default(),
        Some(Value::Object(d)) => {
            unknown_keys(d, &DEFAULT_KEYS, "jwt.defaults", errors);
            spec::overrides(d, "jwt.defaults", errors)
        }
        Some(_) => {
            errors.push(problem("jwt.defaults", "expected an object"));
            Overrides::default()
        }
    };
    if errors.len() > before {
        return None;
    }
    Some(JwtSpec {
        issuer: issuer?,
        audience,
        source: source?,
        claims,
        defaults,
    })
}

fn claim_paths(v: Option<&Value>, errors: &mut Vec<Problem>) -> ClaimPaths {
    let mut out = ClaimPaths {
        name: vec!["sub".into()],
        ..ClaimPaths::default()
    };
    let m = match v {
        None => return out,
        Some(Value::Object(m)) => m,
        Some(_) => {
            errors.push(problem(
                "jwt.claims",
                "expected an object of claim paths by field",
            ));
            return out;
        }
    };
    unknown_keys(m, &CLAIM_KEYS, "jwt.claims", errors);
    for (k, v) in m {
        let Some(parts) = claim_path(v, &at("jwt.claims", k), errors) else {
            continue;
        };
        match k.as_str() {
            "name" => out.name = parts,
            "mode" => out.mode = Some(parts),
            "bot" => out.bot = Some(parts),
            "flags" => out.flags = Some(parts),
            "grants" => out.grants = Some(parts),
            _ => {}
        }
    }
    out
}

/// One claim path, read one way only:
///
/// - a name, `"tp_mode"`: the top-level claim of exactly that name;
/// - a URI, `"https://example.com/grants"` (a scheme, then `:`): the
///   top-level claim of exactly that name, dots and all, as RFC 7519 has
///   custom claims named and issuers write them;
/// - an array of names, `["ext", "mode"]`: the claim `mode` inside the
///   object claim `ext`, each name exact (`["tp.mode"]` is a top-level
///   claim named `tp.mode`).
///
/// Any other string with a `.` could be the claim of that name or a claim
/// inside an object: which one a token was read by would hang on the token,
/// so the file is refused and says how to write each.
fn claim_path(v: &Value, path: &str, errors: &mut Vec<Problem>) -> Option<Vec<String>> {
    let is_name = |s: &str| !s.trim().is_empty() && !s.chars().any(char::is_control);
    match v {
        Value::String(s) if !is_name(s) => {
            errors.push(problem(
                path,
                "a claim's name is printable text that is not blank",
            ));
            None
        }
        Value::String(s) if !s.contains('.') || is_uri(s) => Some(vec![s.clone()]),
        Value::String(s) => {
            let shown = crate::chars::escape_name(s);
            let parts: Vec<&str> = s.split('.').collect();
            let nested = if parts.iter().all(|p| !p.is_empty()) {
                format!(
                    "`{}` for a claim inside objects, or ",
                    crate::chars::escape(&serde_json::to_string(&parts).unwrap_or_default()),
                )
            } else {
                String::new()
            };
            errors.push(Problem {
                path: path.into(),
                message: format!(
                    "`{shown}` can be read two ways: the claim named `{shown}`, or a claim inside an object"
                ),
                help: Some(format!(
                    "write {nested}`{}` for the claim named `{shown}`",
                    crate::chars::escape(&serde_json::to_string(&[s]).unwrap_or_default()),
                )),
            });
            None
        }
        Value::Array(a) if !a.is_empty() => {
            let mut parts = Vec::new();
            for (i, v) in a.iter().enumerate() {
                match v {
                    Value::String(s) if is_name(s) => parts.push(s.clone()),
                    _ => errors.push(problem(
                        format!("{path}[{i}]"),
                        "expected a claim's name, printable text that is not blank",
                    )),
                }
            }
            (parts.len() == a.len()).then_some(parts)
        }
        _ => {
            errors.push(problem(
                path,
                "expected a claim's name, such as `tp_mode`, or an array of names for a claim inside objects, such as `[\"ext\", \"mode\"]`",
            ));
            None
        }
    }
}

/// Whether a claim path is a URI: a scheme (a letter, then letters,
/// digits, `+` or `-`) and `:` with something after it, as in
/// `https://example.com/grants` or `urn:example:grants`.
fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-')
        && !rest.is_empty()
}

/// Reads a JWKS file as a reload reads every file: a regular file only,
/// opened without waiting, so that a FIFO at its path never holds a reload.
pub fn read_keys(path: &Path) -> Result<(Keys, Vec<String>), String> {
    let shown = path.display();
    let bytes = crate::gateway::reload::read_regular(path)
        .map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    if bytes.len() > MAX_JWKS_BYTES {
        return Err(format!(
            "`{shown}` is larger than {} KiB",
            MAX_JWKS_BYTES >> 10
        ));
    }
    Keys::from_json(&bytes).map_err(|e| format!("`{shown}`: {e}"))
}

impl Keys {
    /// The keys of a JWKS document (`{"keys": [...]}`) that can check a
    /// signature, and a note for each key left out. No usable key is an
    /// error.
    pub fn from_json(bytes: &[u8]) -> Result<(Keys, Vec<String>), String> {
        install_crypto_provider();
        let doc: Value = serde_json::from_slice(crate::input::strip_bom_bytes(bytes))
            .map_err(|e| format!("not a JSON Web Key Set: {e}"))?;
        let Some(list) = doc.get("keys").and_then(Value::as_array) else {
            return Err("not a JSON Web Key Set: no `keys` array".into());
        };
        let mut keys = Vec::new();
        let mut notes = Vec::new();
        for (i, raw) in list.iter().enumerate() {
            match key(raw) {
                Ok(k) => keys.push(k),
                Err(why) => notes.push(format!("key {i} left out: {why}")),
            }
        }
        if keys.is_empty() {
            let mut message = "no key in the set can check a signature".to_string();
            if !notes.is_empty() {
                message.push_str(&format!(" ({})", notes.join("; ")));
            }
            return Err(message);
        }
        Ok((Keys { keys }, notes))
    }

    /// The key for a token's header: the one its `kid` names, or the only
    /// key when it names none.
    fn find(&self, kid: Option<&str>) -> Option<&Key> {
        match kid {
            Some(kid) => self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None if self.keys.len() == 1 => self.keys.first(),
            None => None,
        }
    }
}

fn key(raw: &Value) -> Result<Key, String> {
    let kty = raw.get("kty").and_then(Value::as_str).unwrap_or("");
    if kty == "oct" {
        return Err("a symmetric (`oct`) key is a shared secret, not a public key".into());
    }
    let jwk: Jwk = serde_json::from_value(raw.clone())
        .map_err(|e| format!("not a key this gateway reads: {e}"))?;
    if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
        return Err("its `use` is not `sig`".into());
    }
    let family: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return Err("an elliptic curve other than P-256 and P-384".into()),
        },
        AlgorithmParameters::OctetKeyPair(p) => match p.curve {
            EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
            _ => return Err("an octet key pair other than Ed25519".into()),
        },
        AlgorithmParameters::OctetKey(_) => {
            return Err("a symmetric (`oct`) key is a shared secret, not a public key".into());
        }
        _ => {
            return Err(format!(
                "a key of type `{kty}`, which signs nothing this gateway checks"
            ));
        }
    };
    let algorithms = match jwk.common.key_algorithm {
        None => family,
        Some(named) => match Algorithm::try_from(named).ok() {
            Some(a) if family.contains(&a) => vec![a],
            _ => {
                return Err(format!(
                    "its `alg` does not sign with a key of type `{kty}`"
                ));
            }
        },
    };
    let decoding = DecodingKey::from_jwk(&jwk).map_err(|e| format!("not a usable key: {e}"))?;
    Ok(Key {
        kid: jwk.common.key_id.clone(),
        algorithms,
        decoding,
    })
}

/// Why a token was refused, for the gateway's own log: never for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No key in the set has the token's `kid` (or it names none and the
    /// set has several): the set may have rotated since it was fetched.
    UnknownKey,
    Other(String),
}

/// Checks a token's signature, issuer, audience, `exp` and `nbf`; its claims.
pub fn verify(token: &str, spec: &JwtSpec, keys: &Keys) -> Result<Value, Refusal> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|e| Refusal::Other(format!("a header this gateway does not accept: {e}")))?;
    if header.crit.is_some() {
        return Err(Refusal::Other("the header has `crit` extensions".into()));
    }
    let key = keys
        .find(header.kid.as_deref())
        .ok_or(Refusal::UnknownKey)?;
    if !key.algorithms.contains(&header.alg) {
        return Err(Refusal::Other(format!(
            "algorithm {:?}, which its key does not sign with",
            header.alg
        )));
    }
    let mut validation = Validation::new(header.alg);
    validation.algorithms = vec![header.alg];
    validation.leeway = LEEWAY.as_secs();
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.set_issuer(&[spec.issuer.as_str()]);
    validation.set_audience(&spec.audience);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    let data = jsonwebtoken::decode::<Value>(token, &key.decoding, &validation)
        .map_err(|e| Refusal::Other(described(&e)))?;
    Ok(data.claims)
}

/// A refusal in words, for the log.
fn described(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::InvalidSignature => "the signature does not match".into(),
        K::ExpiredSignature => "expired (`exp`)".into(),
        K::ImmatureSignature => "not valid yet (`nbf`)".into(),
        K::InvalidIssuer => "another issuer (`iss`)".into(),
        K::InvalidAudience => "meant for another audience (`aud`)".into(),
        K::MissingRequiredClaim(c) => format!("no `{c}` claim"),
        K::InvalidClaimFormat(c) => format!("claim `{c}` is malformed"),
        K::InvalidAlgorithm => "an algorithm its key does not sign with".into(),
        _ => format!("malformed: {e}"),
    }
}

/// The value at a claim path.
pub fn claim<'a>(claims: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(claims, |v, part| v.get(part.as_str()))
}

/// When keys fetched from a `jwks_url` are fetched again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Keys older than this are fetched again before they are used.
    pub refresh: Duration,
    /// The least time between two fetches, whatever asks for one.
    pub pause: Duration,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            refresh: REFRESH,
            pause: REFETCH_PAUSE,
        }
    }
}

/// A JWKS fetched from a URL: the last good keys, refreshed after
/// [`Timing::refresh`] or on an unknown `kid`, one fetch at a time and at
/// most one per [`Timing::pause`]; a failed fetch keeps the last good keys.
pub struct Fetched {
    url: String,
    timing: Arc<Mutex<Timing>>,
    keys: RwLock<Option<(Arc<Keys>, Instant)>>,
    last_attempt: Mutex<Option<Instant>>,
    fetching: tokio::sync::Mutex<()>,
}

impl Fetched {
    pub fn new(url: String, timing: Arc<Mutex<Timing>>) -> Fetched {
        Fetched {
            url,
            timing,
            keys: RwLock::new(None),
            last_attempt: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    fn timing(&self) -> Timing {
        *self.timing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The keys to check a token with. With none yet, or when `stale` (a
    /// `kid` they lack), they are fetched first, the request waiting for
    /// it; keys older than [`Timing::refresh`] are used as they are while
    /// a fetch runs beside the request, so that no request waits on a slow
    /// issuer for keys it already has.
    pub async fn keys(self: &Arc<Self>, stale: bool) -> Option<Arc<Keys>> {
        let current = self
            .keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some((keys, at)) = current
            && !stale
        {
            if at.elapsed() >= self.timing().refresh && self.may_fetch() {
                let this = Arc::clone(self);
                tokio::spawn(async move {
                    let _one = this.fetching.lock().await;
                    if this.may_fetch() {
                        this.fetch().await;
                    }
                });
            }
            return Some(keys);
        }
        if self.may_fetch() {
            let _one = self.fetching.lock().await;
            // Another request may have fetched while this one waited.
            if self.may_fetch() {
                self.fetch().await;
            }
        }
        self.keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|(k, _)| k.clone())
    }

    fn may_fetch(&self) -> bool {
        self.last_attempt
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none_or(|at| at.elapsed() >= self.timing().pause)
    }

    async fn fetch(&self) {
        *self
            .last_attempt
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        let shown = super::super::origin::shown(&self.url);
        match tokio::time::timeout(FETCH_TIMEOUT, get(&self.url)).await {
            Ok(Ok(bytes)) => match Keys::from_json(&bytes) {
                Ok((keys, notes)) => {
                    for n in notes {
                        log!("warning: the keys at `{shown}`: {n}");
                    }
                    *self.keys.write().unwrap_or_else(PoisonError::into_inner) =
                        Some((Arc::new(keys), Instant::now()));
                }
                Err(why) => log!("error: the keys at `{shown}`: {why}; keeping the last good keys"),
            },
            Ok(Err(why)) => {
                log!("error: cannot fetch the keys at `{shown}`: {why}; keeping the last good keys")
            }
            Err(_) => log!(
                "error: the keys at `{shown}` did not come within {} s; keeping the last good keys",
                FETCH_TIMEOUT.as_secs()
            ),
        }
    }
}

/// The body of a GET, up to [`MAX_JWKS_BYTES`].
async fn get(url: &str) -> Result<Vec<u8>, String> {
    let client = super::super::remote::http_client(url)?;
    let mut response = client
        .get(url)
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| super::super::origin::origins_only(&e.to_string()))?;
    if !response.status().is_success() {
        return Err(format!("HTTP status {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| super::super::origin::origins_only(&e.to_string()))?
    {
        if body.len() + chunk.len() > MAX_JWKS_BYTES {
            return Err(format!("larger than {} KiB", MAX_JWKS_BYTES >> 10));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
