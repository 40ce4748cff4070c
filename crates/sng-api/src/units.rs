//! Parsing of Go durations (`refresh.interval`) and Kubernetes quantities (`resources`).

use std::time::Duration;

/// Parse a Go duration (`time.ParseDuration`): an optional sign, then a sequence of decimal numbers
/// each with a unit among `ns`, `us`, `µs`, `ms`, `s`, `m`, `h` (e.g. `1h30m`, `1.5s`), or `0`.
/// Returns the signed length in nanoseconds, or `None` when the text is not a Go duration.
pub fn parse_go_duration_nanos(text: &str) -> Option<i128> {
    let (negative, mut rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per_unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += value * nanos_per_unit;
    }
    // Go refuses durations beyond ~292 years (int64 nanoseconds).
    if total > i64::MAX as f64 {
        return None;
    }
    let nanos = total.round() as i128;
    Some(if negative { -nanos } else { nanos })
}

/// Parse a Go duration into a non-negative [`Duration`].
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let nanos = parse_go_duration_nanos(text)?;
    u64::try_from(nanos).ok().map(Duration::from_nanos)
}

/// Parse a Kubernetes quantity (`500m`, `2`, `1.5`, `256Mi`, `1G`, `1e3`) into its value
/// (cores for cpu, bytes for memory).
pub fn parse_quantity(text: &str) -> Option<f64> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    if number.is_empty() || number.starts_with('-') || number.matches('.').count() > 1 {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        s if s.starts_with(['e', 'E']) => 10f64.powi(s[1..].parse::<i32>().ok()?),
        _ => return None,
    };
    let out = value * factor;
    out.is_finite().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let table: &[(&str, Option<i128>)] = &[
            ("0", Some(0)),
            ("1m", Some(60_000_000_000)),
            ("30m", Some(1_800_000_000_000)),
            ("1h30m", Some(5_400_000_000_000)),
            ("1.5h", Some(5_400_000_000_000)),
            ("90s", Some(90_000_000_000)),
            ("300ms", Some(300_000_000)),
            ("2us", Some(2_000)),
            ("2µs", Some(2_000)),
            ("5ns", Some(5)),
            ("-1m", Some(-60_000_000_000)),
            ("+1m", Some(60_000_000_000)),
            ("", None),
            ("1", None),
            ("m", None),
            ("1d", None),
            ("1 m", None),
            ("1..5s", None),
            (".s", None),
            ("-", None),
            ("1m30", None),
            ("99999999999999h", None),
        ];
        for (text, want) in table {
            assert_eq!(parse_go_duration_nanos(text), *want, "{text:?}");
        }
        assert_eq!(parse_go_duration("-1m"), None);
        assert_eq!(parse_go_duration("2m"), Some(Duration::from_secs(120)));
    }

    #[test]
    fn quantities() {
        let table: &[(&str, Option<f64>)] = &[
            ("500m", Some(0.5)),
            ("2", Some(2.0)),
            ("1.5", Some(1.5)),
            ("256Mi", Some(268_435_456.0)),
            ("1G", Some(1e9)),
            ("1e3", Some(1000.0)),
            ("", None),
            ("Mi", None),
            ("-1", None),
            ("1Xi", None),
            ("1.2.3", None),
        ];
        for (text, want) in table {
            assert_eq!(parse_quantity(text), *want, "{text:?}");
        }
    }
}
