//! Tests of the timing `decide` relies on: the retry backoff and its window, and the spread of
//! retries and refreshes by their jitter.

use super::*;

#[test]
fn backoff_grows_with_full_jitter_and_a_cap() {
    // (failures, jitter, delay)
    for (failures, jitter, delay) in [
        (1, 0.0, BACKOFF_BASE),
        (1, 0.5, BACKOFF_BASE + BACKOFF_BASE / 2),
        (1, 1.0, 2 * BACKOFF_BASE),
        (2, 0.0, BACKOFF_BASE),
        (2, 1.0, 4 * BACKOFF_BASE),
        (5, 1.0, 32 * BACKOFF_BASE),
        (40, 1.0, BACKOFF_CAP),
        (0, 1.0, 2 * BACKOFF_BASE),
        (3, 7.0, 8 * BACKOFF_BASE),
    ] {
        assert_eq!(backoff(failures, jitter), delay, "{failures} {jitter}");
    }
    assert!(backoff(5, 0.5) < backoff(5, 1.0) && backoff(5, 0.5) > BACKOFF_BASE);
    for n in 1..30 {
        let (low, high) = retry_window(n);
        assert!(
            low == BACKOFF_BASE && high > low && high <= BACKOFF_CAP,
            "{n}"
        );
    }
}

/// 500 workspaces failing in the same second (a registry down for all): their first retries
/// spread over the whole window, evenly, and the same way every time (the jitter is derived
/// from each workspace's uid and failure count, as `observe` does).
#[test]
fn retries_of_workspaces_failing_together_spread_over_the_window() {
    let delays = |failures: i64| -> Vec<i64> {
        (0..500)
            .map(|i| backoff(failures, jitter(&format!("uid-{i:04}/{failures}"))))
            .collect()
    };
    for failures in [1, 2, 3] {
        let d = delays(failures);
        assert_eq!(d, delays(failures), "deterministic");
        let (low, high) = retry_window(failures);
        assert!(d.iter().all(|s| (low..=high).contains(s)), "{d:?}");
        let mut sorted = d.clone();
        sorted.sort();
        let width = (high - low) as f64;
        // The earliest and latest within 5% of the window's ends (whole seconds: the last one
        // is reached by a jitter of 1 only), the median near its middle.
        assert!(((sorted[0] - low) as f64) <= width * 0.05, "{sorted:?}");
        assert!(
            ((high - 1 - sorted[499]) as f64) <= width * 0.05,
            "{sorted:?}"
        );
        let mid = (sorted[250] - low) as f64 / width;
        assert!((0.4..0.6).contains(&mid), "median at {mid} of the window");
        // No second of the window takes more than 3 times its even share.
        let mut per_second = std::collections::BTreeMap::<i64, usize>::new();
        for s in &d {
            *per_second.entry(*s).or_default() += 1;
        }
        let share = 500.0 / (width + 1.0);
        let busiest = *per_second.values().max().unwrap();
        assert!(
            (busiest as f64) <= 3.0 * share.max(1.0),
            "{busiest} retries in one second (even share {share:.1})"
        );
    }
}

#[test]
fn refreshes_are_spread() {
    let firsts: Vec<i64> = (0..10)
        .map(|i| first_refresh(0, 600, i as f64 / 10.0))
        .collect();
    assert!(firsts.windows(2).all(|w| w[0] < w[1]));
    assert!(firsts.iter().all(|t| (300..=600).contains(t)));
    assert!((540..=660).contains(&next_refresh(0, 600, 0.5)));
}

#[test]
fn jitter_is_fixed_by_its_seed_and_spread() {
    assert_eq!(jitter("ws-1/0"), jitter("ws-1/0"));
    assert_ne!(jitter("ws-1/0"), jitter("ws-1/1"));
    let spread: Vec<f64> = (0..200).map(|i| jitter(&format!("w{i}"))).collect();
    assert!(spread.iter().all(|j| (0.0..1.0).contains(j)));
    assert!(spread.iter().any(|j| *j < 0.2) && spread.iter().any(|j| *j > 0.8));
}
