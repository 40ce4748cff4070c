//! Things that expire (Secrets with `tofu.stackngo.io/expires-at`, API tokens): where an expiry
//! stands at a given time, which warning falls due (each once: 7 days ahead, 1 day ahead, then
//! expired), and when the next one will. Times are seconds since the epoch; no clock is read here.

/// One day, in seconds.
pub const DAY: i64 = 86_400;
/// The first warning comes this long ahead.
pub const WEEK: i64 = 7 * DAY;

/// A warning about an expiry, sent once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Notice {
    /// 7 days (or less) ahead.
    Week,
    /// 1 day (or less) ahead.
    Day,
    /// Expired.
    Expired,
}

impl Notice {
    /// The word stored in events (`within`): `7d`, `1d`, `expired`.
    pub fn as_str(self) -> &'static str {
        match self {
            Notice::Week => "7d",
            Notice::Day => "1d",
            Notice::Expired => "expired",
        }
    }

    /// The notice of a stored word.
    pub fn parse(s: &str) -> Option<Notice> {
        [Notice::Week, Notice::Day, Notice::Expired]
            .into_iter()
            .find(|n| n.as_str() == s)
    }
}

/// Where an expiry stands at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// More than 7 days left.
    Valid,
    /// At most 7 days left (`left` seconds, > 0).
    Expiring {
        /// Seconds left.
        left: i64,
    },
    /// `now` is at or past the expiry.
    Expired,
}

/// Where `expires_at` stands at `now`.
pub fn standing(expires_at: i64, now: i64) -> Standing {
    let left = expires_at - now;
    if left <= 0 {
        Standing::Expired
    } else if left <= WEEK {
        Standing::Expiring { left }
    } else {
        Standing::Valid
    }
}

/// Whether `expires_at` is still ahead but at most `within` seconds away (a metric's window).
pub fn expires_within(expires_at: i64, now: i64, within: i64) -> bool {
    expires_at > now && expires_at - now <= within
}

/// The tightest notice that applies at `now`, if any.
pub fn notice_at(expires_at: i64, now: i64) -> Option<Notice> {
    let left = expires_at - now;
    if left <= 0 {
        Some(Notice::Expired)
    } else if left <= DAY {
        Some(Notice::Day)
    } else if left <= WEEK {
        Some(Notice::Week)
    } else {
        None
    }
}

/// The notice to send now, given those sent already for this expiry: the tightest that applies,
/// unless it or a tighter one was sent. A wider notice skipped (the expiry was set, or first
/// seen, inside a tighter window) is never sent late: each notice goes at most once, in order.
pub fn notice_due(expires_at: i64, now: i64, sent: &[Notice]) -> Option<Notice> {
    let due = notice_at(expires_at, now)?;
    if sent.iter().any(|s| *s >= due) {
        return None;
    }
    Some(due)
}

/// When the next notice falls due after `now` (the moment to look again), if any is left.
pub fn next_notice_at(expires_at: i64, now: i64) -> Option<i64> {
    [expires_at - WEEK, expires_at - DAY, expires_at]
        .into_iter()
        .find(|t| *t > now)
}

/// Time left in words: `6d 23h`, `5h 10m`, `42s`; `expired` when none.
pub fn left_in_words(left: i64) -> String {
    if left <= 0 {
        return "expired".into();
    }
    let (d, h, m) = (left / DAY, left % DAY / 3600, left % 3600 / 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {}s", left % 60)
    } else {
        format!("{left}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    #[test]
    fn standing_and_windows() {
        for (left, standing_is, in_7d, in_1d) in [
            (8 * DAY, Standing::Valid, false, false),
            (WEEK + 1, Standing::Valid, false, false),
            (WEEK, Standing::Expiring { left: WEEK }, true, false),
            (2 * DAY, Standing::Expiring { left: 2 * DAY }, true, false),
            (DAY, Standing::Expiring { left: DAY }, true, true),
            (5, Standing::Expiring { left: 5 }, true, true),
            (0, Standing::Expired, false, false),
            (-DAY, Standing::Expired, false, false),
        ] {
            assert_eq!(standing(NOW + left, NOW), standing_is, "{left}");
            assert_eq!(expires_within(NOW + left, NOW, WEEK), in_7d, "{left}");
            assert_eq!(expires_within(NOW + left, NOW, DAY), in_1d, "{left}");
        }
    }

    #[test]
    fn each_notice_goes_once_in_order() {
        use Notice::*;
        for (left, sent, due) in [
            (8 * DAY, vec![], None),
            (2 * DAY, vec![], Some(Week)),
            (2 * DAY, vec![Week], None),
            (DAY, vec![Week], Some(Day)),
            // First seen inside the last day: the 1-day notice, never a late 7-day one.
            (3600, vec![], Some(Day)),
            (3600, vec![Day], None),
            (0, vec![Week, Day], Some(Expired)),
            (-5, vec![], Some(Expired)),
            (-5, vec![Expired], None),
            // Sent already for a tighter window: nothing wider again.
            (2 * DAY, vec![Day], None),
        ] {
            assert_eq!(notice_due(NOW + left, NOW, &sent), due, "{left} {sent:?}");
        }
    }

    #[test]
    fn the_next_look_is_at_the_next_notice() {
        for (left, next) in [
            (10 * DAY, Some(NOW + 3 * DAY)),
            (2 * DAY, Some(NOW + DAY)),
            (DAY, Some(NOW + DAY)),
            (30, Some(NOW + 30)),
            (0, None),
            (-1, None),
        ] {
            assert_eq!(next_notice_at(NOW + left, NOW), next, "{left}");
        }
    }

    #[test]
    fn words() {
        for (left, words) in [
            (2 * DAY - 3600, "1d 23h"),
            (5 * 3600 + 600, "5h 10m"),
            (125, "2m 5s"),
            (42, "42s"),
            (0, "expired"),
        ] {
            assert_eq!(left_in_words(left), words);
        }
        for n in [Notice::Week, Notice::Day, Notice::Expired] {
            assert_eq!(Notice::parse(n.as_str()), Some(n));
        }
    }
}
