//! The HTTP listener's session ids: self-contained and signed, so that any
//! gateway process that shares the key (`--session-key-file`) can tell an
//! id one of them gave from any other string, and recreate the session it
//! names without a store shared between them (docs/gateway.md, "Session
//! ids").
//!
//! An id is base64url (no padding) of the bytes
//!
//! ```text
//! version (1) | created (8, seconds since 1970, big-endian) | nonce (16)
//! | protocol length (1) | protocol | client length (1) | client | tag (32)
//! ```
//!
//! where `protocol` is the protocol version the handshake agreed on,
//! `client` the client's own name (its first [`MAX_CLIENT`] bytes: a label
//! for the audit log, as the handshake gave it), and `tag` HMAC-SHA256,
//! under the key, of a domain string, everything before the tag, the
//! caller's identity (the clients file's name or a JWT's subject, or
//! `anonymous` where callers are not named) and the caller's context
//! (mode, Bot, flags, grants). Identity and context are in the tag and not
//! in the id: the id says nothing about who holds it, and a process checks
//! it against the caller and context of the request that shows it. An id
//! shown by another caller, in another context, altered, made under
//! another key, older than its bound or not an id at all fails the same
//! check, and the listener answers all of them alike.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit as _, Mac as _};
use rmcp::model::{InitializeRequestParams, ProtocolVersion, ServerConfig};
use sha2::Sha256;
use subtle::ConstantTimeEq as _;

use crate::Context;

/// The fewest bytes a session key holds: HMAC-SHA256's own output size.
pub const MIN_KEY: usize = 32;
/// The most bytes of the client's name an id carries.
pub const MAX_CLIENT: usize = 64;
/// The most bytes of a protocol version an id carries.
const MAX_PROTOCOL: usize = 32;
/// The longest id text this gateway makes (and so reads).
const MAX_ID: usize = 256;
const VERSION: u8 = 1;
const NONCE: usize = 16;
const TAG: usize = 32;
/// How far ahead of this process's clock an id's creation may be: another
/// machine's clock may run a little ahead.
const CLOCK_SKEW: u64 = 60;
/// What the tag is made for, so that it can never be taken for another
/// HMAC under the same key.
const DOMAIN: &[u8] = b"toolpolicy gateway session id 1\0";
/// The identity of callers where they are not named (no clients file).
pub const ANONYMOUS: &str = "anonymous";

/// A session key: the secret the gateway processes share.
#[derive(Clone)]
pub struct SessionKey(Vec<u8>);

impl std::fmt::Debug for SessionKey {
    /// Never the key itself.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionKey({} bytes)", self.0.len())
    }
}

impl SessionKey {
    /// A key of this process alone, from the system's random source: its
    /// ids are unguessable, and no other process accepts them.
    pub fn random() -> Result<SessionKey, String> {
        let mut key = vec![0; MIN_KEY];
        getrandom::fill(&mut key)
            .map_err(|e| format!("cannot read the system's random source: {e}"))?;
        Ok(SessionKey(key))
    }

    /// The key in `path`: a regular file that only its owner (and group)
    /// may read, holding at least [`MIN_KEY`] bytes of random data, raw or
    /// written as hex or base64 (`openssl rand -hex 32`). Why not, said
    /// with the path.
    pub fn from_file(path: &Path) -> Result<SessionKey, String> {
        let shown = path.display();
        let bytes = super::reload::read_regular(path)
            .map_err(|e| format!("cannot read the session key file `{shown}`: {e}"))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(path)
                .map_err(|e| format!("cannot read the session key file `{shown}`: {e}"))?
                .permissions()
                .mode();
            if mode & 0o004 != 0 {
                return Err(format!(
                    "the session key file `{shown}` is readable by every user of this machine \
                     (mode {:o}): anyone who reads it can make session ids; make it readable by \
                     the gateway's user alone (`chmod 600 {shown}`)",
                    mode & 0o777
                ));
            }
        }
        SessionKey::parse(&bytes).map_err(|why| format!("the session key file `{shown}` {why}"))
    }

    /// A key from a file's bytes: hex or base64 text (surrounding white
    /// space ignored), or raw bytes that are not text. Why not, as the end
    /// of a sentence about the file.
    pub fn parse(bytes: &[u8]) -> Result<SessionKey, String> {
        let text = bytes.trim_ascii();
        let is_text = text
            .iter()
            .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace());
        let key = if !is_text {
            bytes.to_vec()
        } else if let Some(key) = hex(text) {
            key
        } else if let Some(key) = base64(text) {
            key
        } else {
            return Err(
                "is text but neither hex nor base64: write the key as `openssl rand -hex 32` \
                 does, or put raw random bytes in it"
                    .into(),
            );
        };
        if key.len() < MIN_KEY {
            return Err(format!(
                "holds a key of {} bytes; a session key is at least {MIN_KEY} bytes of random data \
                 (`openssl rand -hex 32`)",
                key.len()
            ));
        }
        Ok(SessionKey(key))
    }
}

fn hex(text: &[u8]) -> Option<Vec<u8>> {
    if text.is_empty() || !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |b: u8| char::from(b).to_digit(16);
    text.chunks(2)
        .map(|pair| Some((digit(pair[0])? * 16 + digit(pair[1])?) as u8))
        .collect()
}

fn base64(text: &[u8]) -> Option<Vec<u8>> {
    let text: Vec<u8> = text.iter().copied().filter(|&b| b != b'=').collect();
    STANDARD_NO_PAD
        .decode(&text)
        .or_else(|_| URL_SAFE_NO_PAD.decode(&text))
        .ok()
}

/// Why an id is refused; for the gateway's log only, never for the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not an id this gateway makes.
    Malformed,
    /// Its tag does not match: made under another key, for another caller
    /// or context, or altered.
    Unsigned,
    /// Made longer ago than `--session-max-age`.
    Expired,
    /// Made further ahead of this clock than machines' clocks differ.
    Future,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refused::Malformed => "not a session id this gateway makes",
            Refused::Unsigned => {
                "not signed for this caller and context under this key (another caller's, made \
                 before the caller's context changed, made under another key, or altered)"
            }
            Refused::Expired => "older than `--session-max-age`",
            Refused::Future => "made ahead of this machine's clock by more than a minute",
        })
    }
}

/// What a verified id carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// Seconds since 1970 when it was made.
    pub created: u64,
    /// The protocol version its handshake agreed on.
    pub protocol: String,
    /// The client's own name, as its handshake gave it.
    pub client: Option<String>,
}

impl Claims {
    /// The handshake a process that does not hold the session replays to
    /// recreate it.
    pub fn initialize(&self) -> InitializeRequestParams {
        let version: ProtocolVersion = serde_json::from_value(self.protocol.clone().into())
            .unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE);
        let client = self.client.clone().unwrap_or_default();
        InitializeRequestParams::new(
            Default::default(),
            rmcp::model::Implementation::new(client, ""),
        )
        .with_protocol_version(version)
    }
}

/// Makes and checks session ids under one key.
#[derive(Clone)]
pub struct SessionIds {
    /// The HMAC with its key set, cloned for each id.
    mac: Hmac<Sha256>,
    max_age: Duration,
}

impl SessionIds {
    /// Ids under `key`, accepted up to `max_age` after they were made.
    pub fn new(key: &SessionKey, max_age: Duration) -> SessionIds {
        SessionIds {
            mac: Hmac::new_from_slice(&key.0).expect("HMAC takes a key of any length"),
            max_age,
        }
    }

    /// A new id for caller `who` in `context`, its handshake having agreed
    /// on `protocol`; `None` where the random source fails (then rmcp's own
    /// id, which no other process recreates).
    pub fn mint(
        &self,
        who: &str,
        context: &Context,
        protocol: &str,
        client: Option<&str>,
        now: SystemTime,
    ) -> Option<String> {
        let mut nonce = [0; NONCE];
        getrandom::fill(&mut nonce).ok()?;
        let mut bytes = Vec::with_capacity(64);
        bytes.push(VERSION);
        bytes.extend_from_slice(&seconds(now).to_be_bytes());
        bytes.extend_from_slice(&nonce);
        let protocol = truncated(protocol, MAX_PROTOCOL);
        bytes.push(protocol.len() as u8);
        bytes.extend_from_slice(protocol.as_bytes());
        let client = truncated(client.unwrap_or_default(), MAX_CLIENT);
        bytes.push(client.len() as u8);
        bytes.extend_from_slice(client.as_bytes());
        let tag = self.tag(&bytes, who, context);
        bytes.extend_from_slice(&tag);
        Some(URL_SAFE_NO_PAD.encode(bytes))
    }

    /// What `id` carries, where this key signed it for caller `who` in
    /// `context` within its bound of `now`.
    pub fn verify(
        &self,
        id: &str,
        who: &str,
        context: &Context,
        now: SystemTime,
    ) -> Result<Claims, Refused> {
        if id.len() > MAX_ID {
            return Err(Refused::Malformed);
        }
        let bytes = URL_SAFE_NO_PAD.decode(id).map_err(|_| Refused::Malformed)?;
        let fields = Fields::read(&bytes).ok_or(Refused::Malformed)?;
        let expected = self.tag(fields.signed, who, context);
        if !bool::from(expected.as_slice().ct_eq(fields.tag)) {
            return Err(Refused::Unsigned);
        }
        let now = seconds(now);
        if fields.created > now.saturating_add(CLOCK_SKEW) {
            return Err(Refused::Future);
        }
        if now.saturating_sub(fields.created) > self.max_age.as_secs() {
            return Err(Refused::Expired);
        }
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| Refused::Malformed);
        Ok(Claims {
            created: fields.created,
            protocol: text(fields.protocol)?,
            client: Some(text(fields.client)?).filter(|c| !c.is_empty()),
        })
    }

    /// When `id` says it was made, unverified: for an id this process made
    /// or has verified.
    pub fn created(&self, id: &str) -> Option<u64> {
        if id.len() > MAX_ID {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(id).ok()?;
        Fields::read(&bytes).map(|f| f.created)
    }

    fn tag(&self, signed: &[u8], who: &str, context: &Context) -> [u8; TAG] {
        let mut mac = self.mac.clone();
        mac.update(DOMAIN);
        mac.update(signed);
        let mut put = |bytes: &[u8]| {
            mac.update(&(bytes.len() as u32).to_be_bytes());
            mac.update(bytes);
        };
        put(who.as_bytes());
        // A field left out and one set to nothing are told apart.
        let optional = |put: &mut dyn FnMut(&[u8]), value: Option<&str>| match value {
            None => put(b"-"),
            Some(v) => {
                put(b"+");
                put(v.as_bytes());
            }
        };
        optional(&mut put, context.mode.as_deref());
        optional(&mut put, context.bot.as_deref());
        put(&(context.flags.len() as u32).to_be_bytes());
        for flag in &context.flags {
            put(flag.as_bytes());
        }
        match &context.grants {
            None => put(b"-"),
            Some(grants) => {
                put(b"+");
                put(&(grants.len() as u32).to_be_bytes());
                for grant in grants {
                    put(grant.as_bytes());
                }
            }
        }
        mac.finalize().into_bytes().into()
    }
}

/// An id's bytes, split where its lengths say; `None` where they do not
/// add up.
struct Fields<'a> {
    signed: &'a [u8],
    created: u64,
    protocol: &'a [u8],
    client: &'a [u8],
    tag: &'a [u8],
}

impl<'a> Fields<'a> {
    fn read(bytes: &'a [u8]) -> Option<Fields<'a>> {
        let (signed, tag) = bytes.split_at_checked(bytes.len().checked_sub(TAG)?)?;
        let (&version, rest) = signed.split_first()?;
        if version != VERSION {
            return None;
        }
        let (created, rest) = rest.split_first_chunk::<8>()?;
        let (_nonce, rest) = rest.split_first_chunk::<NONCE>()?;
        let (&n, rest) = rest.split_first()?;
        let (protocol, rest) = rest.split_at_checked(usize::from(n))?;
        let (&n, rest) = rest.split_first()?;
        let (client, rest) = rest.split_at_checked(usize::from(n))?;
        if !rest.is_empty() {
            return None;
        }
        Some(Fields {
            signed,
            created: u64::from_be_bytes(*created),
            protocol,
            client,
            tag,
        })
    }
}

fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The first `max` bytes of `text`, cut at a character's boundary.
fn truncated(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What an `initialize` request's body asks for, as an id carries it: the
/// protocol version the handshake will agree on (rmcp's rule, with the
/// gateway's own server information) and the client's name. `None` for a
/// body that is not an `initialize` request.
pub fn handshake(body: &[u8]) -> Option<(String, String)> {
    // Most bodies without a session are requests of the sessionless era:
    // they are not parsed a second time.
    memchr::memmem::find(body, b"\"initialize\"")?;
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    if message.get("method")?.as_str()? != "initialize" {
        return None;
    }
    let params: InitializeRequestParams =
        serde_json::from_value(message.get("params")?.clone()).ok()?;
    let agreed = rmcp::ServerHandler::negotiate_initialize(&Negotiator, &params).ok()?;
    Some((
        agreed.protocol_version.as_str().to_string(),
        params.client_info.name,
    ))
}

/// The gateway's server side as the handshake's negotiation sees it.
struct Negotiator;

impl rmcp::ServerHandler for Negotiator {
    fn get_info(&self) -> ServerConfig {
        super::connection::server_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn ids(key: u8) -> SessionIds {
        SessionIds::new(&SessionKey(vec![key; 32]), HOUR)
    }

    fn context() -> Context {
        Context::mode("agent")
            .with_bot("ci")
            .with_flag("prod")
            .with_grants(["Read"])
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    const NOW: u64 = 1_800_000_000;

    #[test]
    fn an_id_round_trips_for_its_caller_and_context() {
        let ids = ids(7);
        let id = ids
            .mint(
                "client:alice",
                &context(),
                "2025-11-25",
                Some("suite"),
                at(NOW),
            )
            .unwrap();
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{id}"
        );
        assert!(id.len() <= MAX_ID, "{}", id.len());
        let claims = ids
            .verify(&id, "client:alice", &context(), at(NOW + 10))
            .unwrap();
        assert_eq!(
            claims,
            Claims {
                created: NOW,
                protocol: "2025-11-25".into(),
                client: Some("suite".into())
            }
        );
        assert_eq!(claims.initialize().protocol_version.as_str(), "2025-11-25");
        assert_eq!(claims.initialize().client_info.name, "suite");
        // Two ids made at once differ.
        let other = ids
            .mint("client:alice", &context(), "2025-11-25", None, at(NOW))
            .unwrap();
        assert_ne!(id, other);
        let claims = ids
            .verify(&other, "client:alice", &context(), at(NOW))
            .unwrap();
        assert_eq!(claims.client, None);
    }

    #[test]
    fn every_byte_altered_is_refused() {
        let ids = ids(7);
        let id = ids
            .mint("anonymous", &context(), "2025-11-25", Some("c"), at(NOW))
            .unwrap();
        let bytes = URL_SAFE_NO_PAD.decode(&id).unwrap();
        for i in 0..bytes.len() {
            for flip in [0x01, 0x80] {
                let mut altered = bytes.clone();
                altered[i] ^= flip;
                let altered = URL_SAFE_NO_PAD.encode(altered);
                let refused = ids.verify(&altered, "anonymous", &context(), at(NOW));
                assert!(
                    matches!(refused, Err(Refused::Unsigned | Refused::Malformed)),
                    "byte {i}: {refused:?}"
                );
            }
        }
        // Cut short, lengthened, or not an id at all.
        for broken in [
            &id[..id.len() - 1],
            &format!("{id}A"),
            "",
            "0f8fad5b-d9cb-469f-a165-70867728950e",
            "!!!",
            &"A".repeat(4000),
        ] {
            assert!(
                ids.verify(broken, "anonymous", &context(), at(NOW))
                    .is_err(),
                "{broken}"
            );
        }
    }

    #[test]
    fn another_key_caller_or_context_is_refused() {
        let id = ids(7)
            .mint("jwt:bob", &context(), "2025-11-25", None, at(NOW))
            .unwrap();
        let refused = |ids: &SessionIds, who: &str, context: &Context| {
            ids.verify(&id, who, context, at(NOW)).unwrap_err()
        };
        assert_eq!(refused(&ids(8), "jwt:bob", &context()), Refused::Unsigned);
        assert_eq!(
            refused(&ids(7), "client:bob", &context()),
            Refused::Unsigned
        );
        assert_eq!(refused(&ids(7), ANONYMOUS, &context()), Refused::Unsigned);
        let mut changed = Vec::new();
        let mut c = context();
        c.mode = Some("chat".into());
        changed.push(c);
        let mut c = context();
        c.mode = None;
        changed.push(c);
        let mut c = context();
        c.bot = None;
        changed.push(c);
        changed.push(context().with_flag("extra"));
        let mut c = context();
        c.flags.clear();
        changed.push(c);
        let mut c = context();
        c.grants = None;
        changed.push(c);
        changed.push(context().with_grants(Vec::<String>::new()));
        changed.push(context().with_grants(["Read", "Write"]));
        for c in &changed {
            assert_eq!(refused(&ids(7), "jwt:bob", c), Refused::Unsigned, "{c:?}");
        }
        // Field boundaries count: a flag `ab` is not flags `a` and `b`.
        let joined = Context::default().with_flag("ab");
        let split = Context::default().with_flag("a").with_flag("b");
        let id = ids(7)
            .mint("x", &joined, "2025-11-25", None, at(NOW))
            .unwrap();
        assert!(ids(7).verify(&id, "x", &split, at(NOW)).is_err());
    }

    #[test]
    fn an_id_past_its_age_or_ahead_of_the_clock_is_refused() {
        let ids = ids(7);
        let id = ids
            .mint("x", &context(), "2025-11-25", None, at(NOW))
            .unwrap();
        let verify = |secs| ids.verify(&id, "x", &context(), at(secs));
        assert!(verify(NOW + 3600).is_ok());
        assert_eq!(verify(NOW + 3601), Err(Refused::Expired));
        assert!(verify(NOW - 60).is_ok());
        assert_eq!(verify(NOW - 61), Err(Refused::Future));
    }

    #[test]
    fn a_long_client_name_is_cut_at_a_character() {
        let ids = ids(7);
        let name = "é".repeat(40);
        let id = ids
            .mint("x", &context(), "2025-11-25", Some(&name), at(NOW))
            .unwrap();
        let claims = ids.verify(&id, "x", &context(), at(NOW)).unwrap();
        assert_eq!(claims.client.unwrap(), "é".repeat(32));
    }

    #[test]
    fn key_files_hold_hex_base64_or_raw_bytes_of_32_or_more() {
        let hex64 = "ab".repeat(32);
        assert_eq!(
            SessionKey::parse(hex64.as_bytes()).unwrap().0,
            vec![0xab; 32]
        );
        assert!(SessionKey::parse(format!("  {hex64}\n").as_bytes()).is_ok());
        let b64 = base64::engine::general_purpose::STANDARD.encode([0xfe; 32]);
        assert!(b64.ends_with('='));
        assert_eq!(SessionKey::parse(b64.as_bytes()).unwrap().0, vec![0xfe; 32]);
        let b64url = URL_SAFE_NO_PAD.encode([0xfb; 40]);
        assert_eq!(
            SessionKey::parse(b64url.as_bytes()).unwrap().0,
            vec![0xfb; 40]
        );
        let raw: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(37) | 0x80).collect();
        assert_eq!(SessionKey::parse(&raw).unwrap().0, raw);
        for (short, what) in [
            ("ab".repeat(31), "31 bytes"),
            (
                base64::engine::general_purpose::STANDARD.encode([1; 16]),
                "16 bytes",
            ),
            (String::new(), "0 bytes"),
        ] {
            let e = SessionKey::parse(short.as_bytes()).unwrap_err();
            assert!(e.contains(what) && e.contains("at least 32"), "{e}");
        }
        let e = SessionKey::parse(b"my secret passphrase, long enough!").unwrap_err();
        assert!(e.contains("neither hex nor base64"), "{e}");
        assert!(format!("{:?}", SessionKey(vec![0x42; 32])).contains("32 bytes"));
        assert!(!format!("{:?}", SessionKey(vec![0x42; 32])).contains("42"));
    }

    #[test]
    fn random_keys_differ() {
        assert_ne!(
            SessionKey::random().unwrap().0,
            SessionKey::random().unwrap().0
        );
    }

    #[test]
    fn the_handshake_names_the_agreed_version_and_the_client() {
        let init = |version: &str| {
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "suite", "version": "1"}}})
            .to_string()
        };
        assert_eq!(
            handshake(init("2025-06-18").as_bytes()),
            Some(("2025-06-18".into(), "suite".into()))
        );
        // A version this gateway does not know: the one it answers with.
        let (agreed, _) = handshake(init("2099-01-01").as_bytes()).unwrap();
        assert!(
            ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .any(|v| v.as_str() == agreed)
        );
        let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"initialize"}}"#;
        assert_eq!(handshake(list.as_bytes()), None);
        assert_eq!(handshake(b"\"initialize\" {"), None);
    }
}
