//! Masking of secret values in logs. Every value given to a run (secret variables, provider
//! secrets, registry credentials) and every sensitive output is replaced before anything is
//! stored or shown — including the forms a value takes in logs: JSON-escaped and base64.

use base64::Engine as _;

/// What replaces a secret.
pub const MASK: &str = "***";
/// Values shorter than this are not masked (they would blank out ordinary text); the platform
/// still never writes them anywhere itself.
pub const MIN_SECRET_LEN: usize = 4;

/// Replaces known secret values in text.
#[derive(Debug, Clone, Default)]
pub struct Masker {
    needles: Vec<String>,
}

impl Masker {
    /// A masker for the given secret values.
    pub fn new<I, S>(secrets: I) -> Masker
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut m = Masker::default();
        for s in secrets {
            m.add(s.as_ref());
        }
        m
    }

    /// Add one secret value (and its encoded forms).
    pub fn add(&mut self, secret: &str) {
        if secret.len() < MIN_SECRET_LEN {
            return;
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        let json = serde_json::to_string(secret).expect("string");
        let json_inner = json[1..json.len() - 1].to_string();
        let mut forms = vec![secret.to_string(), json_inner, b64.encode(secret)];
        // Multi-line secrets (keys, certificates) also appear line by line.
        forms.extend(
            secret
                .lines()
                .map(str::trim)
                .filter(|l| l.len() >= 8)
                .map(str::to_string),
        );
        for f in forms {
            if f.len() >= MIN_SECRET_LEN && !self.needles.contains(&f) {
                self.needles.push(f);
            }
        }
        // Longest first, so a secret containing another is masked whole.
        self.needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
    }

    /// Number of forms masked.
    pub fn len(&self) -> usize {
        self.needles.len()
    }

    /// Whether nothing is masked.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// The text with every secret form replaced by [`MASK`].
    pub fn mask(&self, text: &str) -> String {
        let mut out = text.to_string();
        for n in &self.needles {
            if out.contains(n.as_str()) {
                out = out.replace(n.as_str(), MASK);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_every_form() {
        let m = Masker::new([
            "CANARY-pass\"word",
            "abc",
            "-----BEGIN KEY-----\nAAAABBBBCCCCDDDD\n-----END KEY-----",
        ]);
        let table = [
            ("password=CANARY-pass\"word end", "password=*** end"),
            (r#"{"v":"CANARY-pass\"word"}"#, r#"{"v":"***"}"#),
            ("b64 Q0FOQVJZLXBhc3Mid29yZA== here", "b64 *** here"),
            ("line AAAABBBBCCCCDDDD only", "line *** only"),
            ("abc is too short to mask", "abc is too short to mask"),
            ("nothing secret", "nothing secret"),
        ];
        for (input, want) in table {
            assert_eq!(m.mask(input), want, "{input}");
        }
    }

    #[test]
    fn longest_secret_wins() {
        let m = Masker::new(["secret", "secret-longer"]);
        assert_eq!(m.mask("x secret-longer y secret"), "x *** y ***");
    }
}
