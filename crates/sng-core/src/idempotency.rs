//! Idempotent requests (`Idempotency-Key`): what a request carrying a key the tenant already
//! used gets. The key follows the business effect: one key, one request (method, path, body),
//! one effect, one answer; a retry replays the answer, a different request with the key is
//! refused. Pure: the store keeps the keys, the HTTP layer applies the outcome.

/// How long a key is remembered (milliseconds): a retry within 24 h replays the first answer.
pub const KEY_TTL_MS: i64 = 24 * 3600 * 1000;

/// How long a request under way holds its key (milliseconds): a retry meanwhile is refused as
/// in progress; past this, its server is taken as gone and the retry runs.
pub const IN_PROGRESS_MS: i64 = 5 * 60 * 1000;

/// Longest key accepted (characters).
pub const MAX_KEY_LEN: usize = 255;

/// A key as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// Fingerprint of the request that first used the key.
    pub fingerprint: String,
    /// When it was first used (unix milliseconds).
    pub created_ms: i64,
    /// Its answer (HTTP status, body), once the request ended; none while it runs.
    pub answer: Option<(u16, String)>,
}

/// What a request with a key gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// First use (or a forgotten one): run it, and keep its answer.
    Fresh,
    /// The same request again: its first answer, nothing done.
    Replay {
        /// HTTP status of the first answer.
        status: u16,
        /// Its body.
        body: String,
    },
    /// Another request with the key: refused (422), nothing done.
    OtherRequest,
    /// The first request with the key is still under way: refused (409), retry later.
    InProgress,
}

/// What a request of fingerprint `fingerprint` gets at `now_ms`, the key being `stored`.
pub fn begin(stored: Option<&Stored>, fingerprint: &str, now_ms: i64) -> Begin {
    let Some(s) = stored.filter(|s| now_ms - s.created_ms < KEY_TTL_MS) else {
        return Begin::Fresh;
    };
    if s.fingerprint != fingerprint {
        return Begin::OtherRequest;
    }
    match &s.answer {
        Some((status, body)) => Begin::Replay {
            status: *status,
            body: body.clone(),
        },
        None if now_ms - s.created_ms < IN_PROGRESS_MS => Begin::InProgress,
        None => Begin::Fresh,
    }
}

/// Whether an answer of `status` is kept for the retries: every answer but the server's own
/// failures (5xx: the retry runs again) and a refusal of the key itself (409 in progress).
pub fn keeps(status: u16) -> bool {
    status < 500 && status != 409
}

/// Why `key` cannot be an idempotency key, if it cannot: 1 to [`MAX_KEY_LEN`] visible ASCII
/// characters.
pub fn key_problem(key: &str) -> Option<String> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Some(format!(
            "header `Idempotency-Key` must hold 1 to {MAX_KEY_LEN} characters (it holds {})",
            key.len()
        ));
    }
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Some(
            "header `Idempotency-Key` must hold visible ASCII characters only (no space)".into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_replays_its_first_answer_and_refuses_another_request() {
        let answered = Stored {
            fingerprint: "f1".into(),
            created_ms: 1_000,
            answer: Some((200, "{}".into())),
        };
        let running = Stored {
            answer: None,
            ..answered.clone()
        };
        let replay = Begin::Replay {
            status: 200,
            body: "{}".into(),
        };
        let day = KEY_TTL_MS;
        for (what, stored, fp, now, want) in [
            ("unknown key", None, "f1", 2_000, Begin::Fresh),
            ("same request", Some(&answered), "f1", 2_000, replay.clone()),
            (
                "same request, 23 h later",
                Some(&answered),
                "f1",
                1_000 + day - 1,
                replay,
            ),
            (
                "other body",
                Some(&answered),
                "f2",
                2_000,
                Begin::OtherRequest,
            ),
            (
                "after 24 h: forgotten",
                Some(&answered),
                "f1",
                1_000 + day,
                Begin::Fresh,
            ),
            (
                "other body after 24 h",
                Some(&answered),
                "f2",
                1_000 + day,
                Begin::Fresh,
            ),
            ("under way", Some(&running), "f1", 2_000, Begin::InProgress),
            (
                "under way, other body",
                Some(&running),
                "f2",
                2_000,
                Begin::OtherRequest,
            ),
            (
                "under way too long: taken over",
                Some(&running),
                "f1",
                1_000 + IN_PROGRESS_MS,
                Begin::Fresh,
            ),
        ] {
            assert_eq!(begin(stored, fp, now), want, "{what}");
        }
    }

    #[test]
    fn answers_kept_and_keys_accepted() {
        for (status, kept) in [
            (200, true),
            (201, true),
            (404, true),
            (422, true),
            (423, true),
            (409, false),
            (500, false),
            (503, false),
        ] {
            assert_eq!(keeps(status), kept, "{status}");
        }
        assert_eq!(key_problem("a1b2-c3"), None);
        assert!(key_problem("").unwrap().contains("1 to 255"));
        assert!(key_problem(&"k".repeat(256))
            .unwrap()
            .contains("it holds 256"));
        assert!(key_problem("a b").unwrap().contains("visible ASCII"));
    }
}
