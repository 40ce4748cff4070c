//! Settings of webhook delivery and the signature of what is sent.

use std::time::Duration;

use hmac::{Hmac, Mac as _};
use sha2::Sha256;

/// `sha256=<hex HMAC-SHA256 of body with key>`: the value of `X-Sng-Signature`.
pub fn sign(key: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Settings of webhook delivery. [`DeliveryConfig::from_env`] reads them from the environment
/// of `sng server`; tests use small values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryConfig {
    /// Base of the exponential backoff (`SNG_WEBHOOK_BACKOFF_MS`, default 1 s).
    pub backoff_base: Duration,
    /// Longest wait between two attempts (`SNG_WEBHOOK_BACKOFF_CAP_MS`, default 5 min).
    pub backoff_cap: Duration,
    /// Attempts before a delivery goes to the dead letters (`SNG_WEBHOOK_MAX_ATTEMPTS`, default 8).
    pub max_attempts: u32,
    /// Timeout of one HTTP attempt (`SNG_WEBHOOK_TIMEOUT_MS`, default 10 s).
    pub timeout: Duration,
    /// Longest sleep of the delivery task between two looks (`SNG_WEBHOOK_POLL_MS`, default 1 s).
    pub poll: Duration,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            backoff_base: Duration::from_secs(1),
            backoff_cap: Duration::from_secs(300),
            max_attempts: 8,
            timeout: Duration::from_secs(10),
            poll: Duration::from_secs(1),
        }
    }
}

impl DeliveryConfig {
    /// The defaults, overridden by `SNG_WEBHOOK_BACKOFF_MS`, `SNG_WEBHOOK_BACKOFF_CAP_MS`,
    /// `SNG_WEBHOOK_MAX_ATTEMPTS`, `SNG_WEBHOOK_TIMEOUT_MS` and `SNG_WEBHOOK_POLL_MS` (positive
    /// integers; anything else is ignored with a warning).
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// As [`DeliveryConfig::from_env`], with variables from `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let d = DeliveryConfig::default();
        let num = |name: &str| -> Option<u64> {
            let raw = lookup(name)?;
            match raw.trim().parse::<u64>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    tracing::warn!(
                        variable = name,
                        value = %raw,
                        "ignored: expected a positive integer"
                    );
                    None
                }
            }
        };
        let ms = |name: &str, default: Duration| num(name).map_or(default, Duration::from_millis);
        DeliveryConfig {
            backoff_base: ms("SNG_WEBHOOK_BACKOFF_MS", d.backoff_base),
            backoff_cap: ms("SNG_WEBHOOK_BACKOFF_CAP_MS", d.backoff_cap),
            max_attempts: num("SNG_WEBHOOK_MAX_ATTEMPTS")
                .map_or(d.max_attempts, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            timeout: ms("SNG_WEBHOOK_TIMEOUT_MS", d.timeout),
            poll: ms("SNG_WEBHOOK_POLL_MS", d.poll),
        }
    }

    /// Wait before the attempt after `failed` failed attempts: exponential with full jitter,
    /// uniform in `[0, min(cap, base × 2^(failed-1))]`.
    pub fn backoff(&self, failed: u32) -> Duration {
        let exp = failed.saturating_sub(1).min(30);
        let ceiling = self
            .backoff_base
            .saturating_mul(1u32 << exp)
            .min(self.backoff_cap);
        let ms = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(rand::random_range(0..=ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_hmac_sha256_in_hex() {
        // RFC 4231, test case 2.
        assert_eq!(
            sign(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn config_from_the_environment() {
        let c = DeliveryConfig::from_lookup(|k| match k {
            "SNG_WEBHOOK_BACKOFF_MS" => Some("20".into()),
            "SNG_WEBHOOK_MAX_ATTEMPTS" => Some("3".into()),
            "SNG_WEBHOOK_POLL_MS" => Some("zero".into()),
            _ => None,
        });
        assert_eq!(c.backoff_base, Duration::from_millis(20));
        assert_eq!(c.max_attempts, 3);
        assert_eq!(c.poll, DeliveryConfig::default().poll);
        assert_eq!(c.backoff_cap, Duration::from_secs(300));
    }

    #[test]
    fn backoff_is_exponential_with_full_jitter_and_capped() {
        let c = DeliveryConfig {
            backoff_base: Duration::from_millis(100),
            backoff_cap: Duration::from_millis(1000),
            ..DeliveryConfig::default()
        };
        for failed in 1..40 {
            let ceiling = (100u64 << (failed - 1).min(30)).min(1000);
            for _ in 0..20 {
                assert!(c.backoff(failed).as_millis() as u64 <= ceiling);
            }
        }
        // Jitter: not always the ceiling.
        let draws: std::collections::HashSet<_> = (0..50).map(|_| c.backoff(5)).collect();
        assert!(draws.len() > 1);
    }
}
