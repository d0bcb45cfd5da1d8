//! The listener's sessions: an id minted for a new one, a request entering
//! one (or recreating one another process opened), their expiry, and the
//! idle and surplus ones ended.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use rmcp::transport::streamable_http_server::SessionManager as _;

use super::super::session_id::{self, Claims};
use super::answer::lock;
use super::callers::Caller;
use super::listener::{Listener, Open};

impl Listener {
    /// The id of a new session `caller` opens with `body`, an `initialize`
    /// request (`None` for any other body: rmcp makes no session for it).
    pub(super) fn mint(&self, body: &[u8], caller: &Caller) -> Option<Arc<str>> {
        let (protocol, client) = session_id::handshake(body)?;
        let ids = self.ids.as_ref()?;
        let who = caller.key.as_deref().unwrap_or(session_id::ANONYMOUS);
        let id = ids.mint(
            who,
            &caller.context,
            &protocol,
            Some(&client),
            SystemTime::now(),
        )?;
        Some(id.into())
    }

    /// A request enters session `id`: `None` when it is not open, or is
    /// another caller's, or its id has expired. One this process does not
    /// hold is entered when its id verifies for `caller` and the key is
    /// shared; then the claims of the id say how to recreate it (but a
    /// `DELETE` recreates nothing: rmcp answers it as for a session gone).
    /// While the returned guard lives the session is busy (for a request,
    /// not a stream) and never idle.
    pub(super) fn enter(
        self: &Arc<Self>,
        id: &str,
        caller: &Caller,
        busy: bool,
        share: &str,
        deletes: bool,
    ) -> Option<(InSession, Option<Claims>)> {
        // Held by rmcp too: a session rmcp does not hold is recreated,
        // whatever the listener still has of it (another request may be
        // recreating it this moment: rmcp lets one restore run at a time).
        let held = lock(&self.sessions).contains_key(id) && self.manager.holds(id);
        let mut again = None;
        if !held {
            let claims = self.verify(id, caller)?;
            if deletes {
                let guard = InSession {
                    listener: Arc::clone(self),
                    id: id.into(),
                    busy: false,
                };
                return Some((guard, None));
            }
            self.opened(id.into(), caller.key.clone(), share.into());
            again = Some(claims);
        }
        let mut sessions = lock(&self.sessions);
        let open = sessions.get_mut(id)?;
        if open.owner != caller.key {
            return None;
        }
        if open.expires <= SystemTime::now() {
            sessions.remove(id);
            drop(sessions);
            self.end(vec![id.into()]);
            return None;
        }
        open.last = Instant::now();
        if busy {
            open.busy += 1;
        }
        let guard = InSession {
            listener: Arc::clone(self),
            id: id.into(),
            busy,
        };
        Some((guard, again))
    }

    /// When session `id` stops being valid: `--session-max-age` after its
    /// id says it was made.
    pub(super) fn expires(&self, id: &str) -> SystemTime {
        let created = self.ids.as_ref().and_then(|ids| ids.created(id));
        let made = created.map_or_else(SystemTime::now, |secs| {
            SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
        });
        made + self.options.session_max_age
    }

    /// What session id `id` carries, where this process recreates sessions
    /// and it verifies for `caller` in the caller's context of now. Why not
    /// goes to the log; the client is told nothing of it.
    pub(super) fn verify(&self, id: &str, caller: &Caller) -> Option<Claims> {
        if !self.recreates {
            return None;
        }
        let who = caller.key.as_deref().unwrap_or(session_id::ANONYMOUS);
        match self
            .ids
            .as_ref()?
            .verify(id, who, &caller.context, SystemTime::now())
        {
            Ok(claims) => Some(claims),
            Err(why) => {
                log!("note: refused a request with 404: its session id is {why}");
                None
            }
        }
    }

    /// rmcp opened session `id` for `owner`, in the share of caller
    /// `share`; past `--max-sessions` others end, as [`to_end`] picks them.
    pub(super) fn opened(self: &Arc<Self>, id: Arc<str>, owner: Option<Arc<str>>, share: Arc<str>) {
        let expires = self.expires(&id);
        let mut sessions = lock(&self.sessions);
        sessions.entry(Arc::clone(&id)).or_insert(Open {
            owner,
            share: Arc::clone(&share),
            last: Instant::now(),
            busy: 0,
            expires,
        });
        let max = self.options.max_sessions.max(1);
        let mut ending = Vec::new();
        while sessions.len() > max {
            let Some(k) = to_end(&sessions, &id, &share, max) else {
                break;
            };
            sessions.remove(&k);
            ending.push(k);
        }
        drop(sessions);
        if !ending.is_empty() {
            log!(
                "note: {} sessions open, over `--max-sessions` {}: ending the longest idle of a caller over its share",
                max + ending.len(),
                max
            );
        }
        self.end(ending);
    }

    /// Ends sessions in rmcp (their streams close, their handlers drop).
    pub(super) fn end(&self, ids: Vec<Arc<str>>) {
        if ids.is_empty() {
            return;
        }
        let manager = Arc::clone(&self.manager);
        tokio::spawn(async move {
            for id in ids {
                let _ = manager.close_session(&id).await;
            }
        });
    }

    /// Ends idle sessions, and forgets those rmcp closed (a client's
    /// `DELETE`), until the task is dropped.
    pub async fn reap(self: Arc<Self>) {
        let idle = self.options.session_idle;
        let tick = (idle / 4).clamp(Duration::from_millis(20), Duration::from_secs(5));
        let mut interval = tokio::time::interval(tick);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            let live = self.manager.ids();
            let mut sessions = lock(&self.sessions);
            let ending: Vec<Arc<str>> = sessions
                .iter()
                .filter(|(_, o)| o.busy == 0 && o.last.elapsed() >= idle)
                .map(|(k, _)| Arc::clone(k))
                .collect();
            for k in &ending {
                sessions.remove(k);
            }
            // Registered after rmcp made it: a session not yet in `live` is
            // one made since the read above, not one that ended.
            sessions.retain(|k, o| live.contains(k) || o.last.elapsed() < Duration::from_secs(1));
            drop(sessions);
            self.end(ending);
        }
    }

    /// Ends every session (their streams close); returns how many there were.
    pub async fn close_all(&self) -> usize {
        self.closing
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let ids: Vec<Arc<str>> = lock(&self.sessions).drain().map(|(k, _)| k).collect();
        let all: Vec<Arc<str>> = self.manager.ids().into_iter().collect();
        for id in &all {
            let _ = self.manager.close_session(id).await;
        }
        ids.len().max(all.len())
    }
}

/// A request's place in its session, released when its answer is sent.
pub(super) struct InSession {
    pub(super) listener: Arc<Listener>,
    pub(super) id: Arc<str>,
    pub(super) busy: bool,
}

impl Drop for InSession {
    fn drop(&mut self) {
        if let Some(open) = lock(&self.listener.sessions).get_mut(&self.id) {
            open.last = Instant::now();
            if self.busy {
                open.busy = open.busy.saturating_sub(1);
            }
        }
    }
}

/// The session to end when the sessions are over `max`, caller `asker`
/// having opened session `new`: each caller's share is `max` divided by the
/// callers holding sessions. A caller over its share loses its own longest
/// idle session; one within it ends the longest idle session of the caller
/// holding the most (who is over its share, since the whole is over). A
/// session serving a request, and the new one, are never ended: `None`
/// when there is no other to end.
pub(super) fn to_end(
    sessions: &HashMap<Arc<str>, Open>,
    new: &str,
    asker: &str,
    max: usize,
) -> Option<Arc<str>> {
    let mut held: HashMap<&str, usize> = HashMap::new();
    for open in sessions.values() {
        *held.entry(&*open.share).or_default() += 1;
    }
    let share = (max / held.len().max(1)).max(1);
    let longest_idle = |caller: &str| {
        sessions
            .iter()
            .filter(|(k, o)| o.busy == 0 && &***k != new && &*o.share == caller)
            .min_by_key(|(_, o)| o.last)
            .map(|(k, _)| Arc::clone(k))
    };
    if held.get(asker).copied().unwrap_or(0) > share {
        return longest_idle(asker);
    }
    let mut over: Vec<(&str, usize)> = held.into_iter().filter(|&(_, n)| n > share).collect();
    // The most first; between equals, in a fixed order.
    over.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    over.into_iter()
        .find_map(|(caller, _)| longest_idle(caller))
}
