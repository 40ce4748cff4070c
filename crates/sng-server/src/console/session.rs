//! Sessions of the console: a random id in a cookie (HttpOnly, SameSite=Strict, Secure over
//! TLS), held in the server's memory with the token it signed in with (never in the cookie),
//! and a CSRF token every mutating form carries. The token is checked again on every request:
//! a revoked or expired token ends the session. A session idle for [`IDLE`] ends too.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The cookie's name.
pub const COOKIE: &str = "sng_console";

/// A session idle this long ends.
pub const IDLE: Duration = Duration::from_secs(8 * 3600);

/// At most this many sessions at once: the oldest goes first.
const MAX_SESSIONS: usize = 10_000;

/// One signed-in browser.
#[derive(Clone)]
pub struct Session {
    /// The token it signed in with (checked again on each request).
    pub token: String,
    /// The CSRF token of its forms.
    pub csrf: String,
    last_seen: Instant,
}

/// The sessions of this server.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

/// 32 random bytes, hex.
fn random_id() -> String {
    let bytes: [u8; 32] = rand::random();
    hex::encode(bytes)
}

impl Sessions {
    /// A new session for `token`: its id (the cookie's value).
    pub fn open(&self, token: String) -> String {
        let id = random_id();
        let mut map = self.map.lock().expect("sessions");
        let now = Instant::now();
        map.retain(|_, s| now.duration_since(s.last_seen) < IDLE);
        if map.len() >= MAX_SESSIONS {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(
            id.clone(),
            Session {
                token,
                csrf: random_id(),
                last_seen: now,
            },
        );
        id
    }

    /// The live session of `id`, touched; `None` when unknown or idle too long (then removed).
    pub fn get(&self, id: &str) -> Option<Session> {
        let mut map = self.map.lock().expect("sessions");
        let now = Instant::now();
        match map.get_mut(id) {
            Some(s) if now.duration_since(s.last_seen) < IDLE => {
                s.last_seen = now;
                Some(s.clone())
            }
            Some(_) => {
                map.remove(id);
                None
            }
            None => None,
        }
    }

    /// End the session `id`.
    pub fn close(&self, id: &str) {
        self.map.lock().expect("sessions").remove(id);
    }
}

/// The `Set-Cookie` value that opens session `id` (`secure`: served over TLS).
pub fn set_cookie(id: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={id}; Path=/ui; HttpOnly; SameSite=Strict{secure}")
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn clear_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0{secure}")
}

/// The session id in a `Cookie` header's value, if any.
pub fn cookie_value(header: &str) -> Option<&str> {
    header
        .split(';')
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// Whether a form's CSRF token is the session's (compared in constant time).
pub fn csrf_ok(session: &Session, given: &str) -> bool {
    let (a, b) = (session.csrf.as_bytes(), given.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether a POST comes from the console's own pages: its `Origin` (a browser always sends
/// one with a form's POST) names the `Host` it was sent to. No `Origin`: not a browser's form.
pub fn same_origin(origin: Option<&str>, host: Option<&str>) -> bool {
    let Some(origin) = origin else { return true };
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .unwrap_or("");
    host.is_some_and(|h| !authority.is_empty() && authority.eq_ignore_ascii_case(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        for (origin, host, want) in [
            (None, Some("a:1"), true),
            (Some("http://a:1"), Some("a:1"), true),
            (Some("https://A:1"), Some("a:1"), true),
            (Some("http://evil.example"), Some("a:1"), false),
            (Some("null"), Some("a:1"), false),
            (Some("http://a:1"), None, false),
        ] {
            assert_eq!(same_origin(origin, host), want, "{origin:?} {host:?}");
        }
    }

    #[test]
    fn cookies() {
        assert_eq!(
            set_cookie("abc", false),
            "sng_console=abc; Path=/ui; HttpOnly; SameSite=Strict"
        );
        assert!(set_cookie("abc", true).ends_with("; Secure"));
        assert!(clear_cookie(true).contains("Max-Age=0"));
        for (header, want) in [
            ("sng_console=abc", Some("abc")),
            ("a=1; sng_console=xyz; b=2", Some("xyz")),
            ("sng_console=", None),
            ("other=1", None),
            ("sng_consolex=1", None),
        ] {
            assert_eq!(cookie_value(header), want, "{header}");
        }
    }

    #[test]
    fn sessions_open_find_and_close() {
        let sessions = Sessions::default();
        let id = sessions.open("sng_tok".into());
        let other = sessions.open("sng_tok".into());
        assert_ne!(id, other, "random ids");
        assert_eq!(id.len(), 64);
        let s = sessions.get(&id).expect("open");
        assert_eq!(s.token, "sng_tok");
        assert!(csrf_ok(&s, &s.csrf.clone()));
        assert!(!csrf_ok(&s, ""));
        assert!(!csrf_ok(&s, &sessions.get(&other).unwrap().csrf));
        sessions.close(&id);
        assert!(sessions.get(&id).is_none());
        assert!(sessions.get("nope").is_none());
    }
}
