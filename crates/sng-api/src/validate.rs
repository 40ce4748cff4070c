//! Validation of every rule of the reference page, with field paths.
//! Messages never quote a value that could be secret (vars, secret data, ids).
//!
//! Here: the rules every kind shares (names, metadata, references to a key of a Secret); the
//! rules of each kind are in its module (`workspace`, `provider`, `secret`, `tenant`).

mod provider;
mod secret;
mod tenant;
mod workspace;

pub use provider::validate_provider;
pub use secret::validate_secret;
pub use tenant::validate_tenant;
pub use workspace::validate_workspace;

use std::sync::LazyLock;

use regex::Regex;

use crate::error::FieldError;
use crate::secret::SECRET_KEY_PATTERN;
use crate::workspace::IDENT_PATTERN;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static pattern")
}

static IDENT: LazyLock<Regex> = LazyLock::new(|| re(IDENT_PATTERN));
static DNS_LABEL: LazyLock<Regex> = LazyLock::new(|| re(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
static DNS_SUBDOMAIN: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"));
static SECRET_KEY: LazyLock<Regex> = LazyLock::new(|| re(SECRET_KEY_PATTERN));

/// Largest secret, as in Kubernetes.
pub const MAX_SECRET_BYTES: usize = 1024 * 1024;
/// Smallest refresh interval.
pub const MIN_REFRESH_NANOS: i128 = 60_000_000_000;

/// Collects field errors.
#[derive(Default)]
struct Errors(Vec<FieldError>);

impl Errors {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError::new(path, message));
    }

    /// `minLength: 1`; returns whether the value is non-empty.
    fn required(&mut self, path: &str, value: &str) -> bool {
        if value.is_empty() {
            self.add(path, "must not be empty (minLength 1)");
            return false;
        }
        true
    }

    fn pattern(&mut self, path: &str, value: &str, re: &Regex, pattern: &str, what: &str) {
        if !re.is_match(value) {
            self.add(path, format!("must match the pattern `{pattern}` ({what})"));
        }
    }

    /// A name referring to an object of the tenant.
    fn ref_name(&mut self, path: &str, value: &str, subdomain: bool) {
        if self.required(path, value) {
            check_name_into(self, path, value, subdomain);
        }
    }
}

/// A reference to one key of a Secret of the tenant (`{path}.name`, `{path}.key`): the name a
/// DNS-1123 subdomain, the key a Secret key. The same rule wherever such a reference appears.
pub(crate) fn secret_key_ref(path: &str, name: &str, key: &str) -> Vec<FieldError> {
    let mut e = Errors::default();
    secret_key_ref_into(&mut e, path, name, key);
    e.0
}

fn secret_key_ref_into(e: &mut Errors, path: &str, name: &str, key: &str) {
    e.ref_name(&format!("{path}.name"), name, true);
    let kp = format!("{path}.key");
    if e.required(&kp, key) {
        e.pattern(&kp, key, &SECRET_KEY, SECRET_KEY_PATTERN, "a secret key");
    }
}

fn check_name_into(errs: &mut Errors, path: &str, name: &str, subdomain: bool) {
    if subdomain {
        if name.len() > 253 || !DNS_SUBDOMAIN.is_match(name) {
            errs.add(
                path,
                "must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', \
                 starting and ending with a letter or digit, at most 253 characters",
            );
        }
    } else if name.len() > 63 || !DNS_LABEL.is_match(name) {
        errs.add(
            path,
            "must be a DNS-1123 label: lowercase letters, digits and '-', \
             starting and ending with a letter or digit, at most 63 characters",
        );
    }
}

/// Check `metadata.name` of an object (a DNS-1123 label, or subdomain for secrets).
pub fn check_name(name: &str, subdomain: bool) -> Vec<FieldError> {
    let mut errs = Errors::default();
    if name.is_empty() {
        errs.add("metadata.name", "is required");
    } else {
        check_name_into(&mut errs, "metadata.name", name, subdomain);
    }
    errs.0
}

/// Check the user part of the metadata of an object: `metadata.name` (see [`check_name`]),
/// `metadata.labels` and `metadata.annotations` (the Kubernetes rules).
pub fn check_meta(meta: &crate::meta::ObjectMeta, subdomain: bool) -> Vec<FieldError> {
    let mut errs = check_name(&meta.name, subdomain);
    errs.extend(crate::labels::check(meta));
    errs
}
