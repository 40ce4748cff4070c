//! The rules of the validation written as JSON Schema patterns (ECMA-262, as ajv and
//! check-jsonschema read them). Each mirrors a check of `crate::validate` or of a kind's module.

/// `metadata.name` of most kinds: a DNS-1123 label (with `maxLength: 63`).
pub const DNS_LABEL: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
/// `metadata.name` of a Secret, and every reference to a Secret: a DNS-1123 subdomain (with
/// `maxLength: 253`).
pub const DNS_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/// A label or annotation key: an optional DNS-1123 subdomain prefix of at most 253 characters
/// and `/`, then a name part of at most 63 characters.
pub const LABEL_KEY: &str = r"^((?=[^/]{1,253}/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$";
/// A label value: empty, or a name part of at most 63 characters.
pub const LABEL_VALUE: &str = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$";
/// `spec.module.source`: `oci://`, a registry, `/`, a repository whose last segment carries no
/// tag (`:`), no digest (`@`), no query.
pub const MODULE_SOURCE: &str = r"^oci://[^/?@]+/(([^?@]*/)?[^/?@:]+|[^?@]*[^/?@]/+)$";
/// `spec.module.tag`: an OCI tag.
pub const OCI_TAG: &str = r"^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$";
/// `spec.backend.s3.bucket`.
pub const BUCKET: &str = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$";
/// `spec.backend.s3.endpoint`: an `http://` or `https://` URL with something after the scheme.
pub const HTTP_ENDPOINT: &str = r"^(https://[\s\S]+|http://[\s\S]{2,})$";
/// `spec.backend.s3.key`: not empty, not starting or ending with `/`.
pub const S3_KEY: &str = r"^[^/]([\s\S]*[^/])?$";
/// A resource quantity given as a string (`500m`, `2`, `256Mi`, `1e3`).
pub const QUANTITY: &str =
    r"^\+?([0-9]+\.?[0-9]*|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][-+]?[0-9]+)?$";
/// A Go duration of at least one minute: Go duration syntax (no sign but `+`), where one
/// component alone reaches a minute (`1m`, `90s`, `1h30m`, `60000ms`, `0.5h`). A sum of
/// components each under a minute (`30s30s`) is refused here though the server takes it.
pub const DURATION_MIN_1M: &str = concat!(
    r"^\+?",
    r"(([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*",
    r"(",
    r"0*[1-9][0-9]*(\.[0-9]*)?(h|m)",
    r"|0*\.(0[2-9]|[1-9]|01[7-9])[0-9]*h",
    r"|0*([6-9][0-9]|[1-9][0-9]{2,})(\.[0-9]*)?s",
    r"|0*([6-9][0-9]{4}|[1-9][0-9]{5,})(\.[0-9]*)?ms",
    r"|0*([6-9][0-9]{7}|[1-9][0-9]{8,})(\.[0-9]*)?(us|µs|μs)",
    r"|0*([6-9][0-9]{10}|[1-9][0-9]{11,})(\.[0-9]*)?ns",
    r")",
    r"(([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*$",
);
/// `spec.version` of a Provider: a version constraint (`~> 5.0`, `>= 1.2, < 2.0`).
pub const VERSION_CONSTRAINT: &str = concat!(
    r"^\s*(=|!=|>|>=|<|<=|~>)?\s*v?[0-9]+(\.[0-9]+){0,2}(-[0-9A-Za-z.-]+)?\s*",
    r"(,\s*(=|!=|>|>=|<|<=|~>)?\s*v?[0-9]+(\.[0-9]+){0,2}(-[0-9A-Za-z.-]+)?\s*)*$"
);
/// A webhook URL: `http(s)://`, a host without credentials, no space or control character.
pub const WEBHOOK_URL: &str =
    r"^https?://[^/?#@\s\x00-\x1f\x7f-\x9f]+([/?#][^\s\x00-\x1f\x7f-\x9f]*)?$";
/// Standard base64 with padding, as the `data` of a Secret, in its canonical form
/// (the unused bits of the last character zero).
pub const BASE64: &str =
    r"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$";
/// Some non-space character (`spec.rego`).
pub const NOT_BLANK: &str = r"\S";
/// An RFC 3339 time (`2030-01-31T00:00:00Z`, `2030-01-31T01:00:00.5+01:00`).
pub const RFC3339: &str = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$";
