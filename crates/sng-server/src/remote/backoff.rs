//! How long the agent waits before it tries a request again: 0.5 s doubling up to 30 s, each
//! wait jittered by ±25 % (agents cut off together do not come back together).

use std::time::Duration;

/// The first wait.
pub const BASE: Duration = Duration::from_millis(500);
/// The longest wait (before jitter).
pub const CAP: Duration = Duration::from_secs(30);

/// The wait after `failed` failed attempts (1 = the first failure), `jitter` in `[-1, 1]`
/// scaling ±25 % of the un-jittered wait. Pure: the caller draws the jitter.
pub fn delay(failed: u32, jitter: f64) -> Duration {
    let exp = failed.saturating_sub(1).min(16);
    let ceiling = BASE.saturating_mul(1u32 << exp).min(CAP);
    let jitter = jitter.clamp(-1.0, 1.0);
    ceiling.mul_f64(1.0 + 0.25 * jitter)
}

/// [`delay`] with a random jitter.
pub fn jittered(failed: u32) -> Duration {
    delay(failed, rand::random_range(-1.0..=1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_by_table() {
        let ms = Duration::from_millis;
        // (failed attempts, jitter, expected wait)
        let table = [
            (0, 0.0, ms(500)),
            (1, 0.0, ms(500)),
            (2, 0.0, ms(1_000)),
            (3, 0.0, ms(2_000)),
            (6, 0.0, ms(16_000)),
            (7, 0.0, ms(30_000)),
            (40, 0.0, ms(30_000)),
            (u32::MAX, 0.0, ms(30_000)),
            (1, 1.0, ms(625)),
            (1, -1.0, ms(375)),
            (3, 0.5, ms(2_250)),
            (9, -1.0, ms(22_500)),
            (9, 1.0, ms(37_500)),
            (1, 7.0, ms(625)),
            (1, -7.0, ms(375)),
        ];
        for (failed, jitter, want) in table {
            assert_eq!(delay(failed, jitter), want, "{failed} {jitter}");
        }
    }

    #[test]
    fn jitter_stays_within_a_quarter() {
        for failed in 1..12 {
            let mid = delay(failed, 0.0);
            for _ in 0..50 {
                let d = jittered(failed);
                assert!(
                    d >= mid.mul_f64(0.75) && d <= mid.mul_f64(1.25),
                    "{d:?} {mid:?}"
                );
            }
        }
    }
}
