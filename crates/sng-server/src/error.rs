//! API errors: an HTTP code, a machine-readable reason, a message and field causes,
//! in the shape of a Kubernetes `Status`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use sng_api::ObjectError;
use sng_store::StoreError;

pub use sng_api::wire::{Cause, StatusBody, StatusDetails};

/// An error answered by the API.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub code: StatusCode,
    /// Machine-readable reason: `Invalid`, `NotFound`, `Conflict`, `AlreadyExists`, `Unauthorized`,
    /// `Forbidden`, `BadRequest`, `ServiceUnavailable`, `InternalError`.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
    /// Field causes of a validation error.
    pub causes: Vec<Cause>,
}

impl ApiError {
    fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            causes: Vec::new(),
        }
    }

    /// 400: the request itself is malformed.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    /// 503: the service cannot do this now.
    pub fn new_unavailable(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            message,
        )
    }

    /// 401: no token or an unknown one.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "missing or invalid token\nhint: pass `--token` or set `SNG_TOKEN` (the server writes its admin token to DATA_DIR/admin.token)",
        )
    }

    /// 403: authenticated but not allowed.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "Forbidden", message)
    }

    /// 401 with a reason: the token is known but expired or revoked.
    pub fn unauthorized_because(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Unauthorized", message)
    }

    /// 403: the token's role is too weak; names the role needed.
    pub fn needs_role(what: &str, needed: sng_store::Role, has: sng_store::Role) -> Self {
        Self::forbidden(format!(
            "{what} needs the `{needed}` role (or higher); this token is `{has}`"
        ))
    }

    /// 401 for a token that is known but no longer valid; the plain 401 otherwise.
    pub fn token_refused(check: &sng_store::TokenCheck) -> Self {
        match check {
            sng_store::TokenCheck::Expired(at) => Self::unauthorized_because(format!(
                "token expired at {at}\nhint: ask a tenant admin for a new one (`sng token create`)"
            )),
            sng_store::TokenCheck::Revoked(at) => Self::unauthorized_because(format!(
                "token revoked at {at}\nhint: ask a tenant admin for a new one (`sng token create`)"
            )),
            _ => Self::unauthorized(),
        }
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NotFound", message)
    }

    /// 409: the object exists already.
    pub fn already_exists(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "AlreadyExists", message)
    }

    /// 409: the write conflicts with the stored state.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "Conflict", message)
    }

    /// 405 with the reason the method is not allowed here.
    pub fn method_not_allowed_because(message: impl Into<String>) -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", message)
    }

    /// 413: the body is larger than the limit of the endpoint (named in the message).
    pub fn payload_too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "PayloadTooLarge", message)
    }

    /// 423: the resource is locked.
    pub fn locked(message: impl Into<String>) -> Self {
        Self::new(StatusCode::LOCKED, "Locked", message)
    }

    /// 423 `Frozen`: the tenant is frozen, or the server read-only; the message says why, by
    /// whom and until when.
    pub fn frozen(message: impl Into<String>) -> Self {
        Self::new(StatusCode::LOCKED, "Frozen", message)
    }

    /// 422 `IdempotencyKeyReused`: the key came with another request.
    pub fn idempotency_key_reused(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "IdempotencyKeyReused",
            message,
        )
    }

    /// 405.
    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "method not allowed on this path",
        )
    }

    /// 428: a production tenant wants the workspace name re-typed for a destructive action.
    pub fn confirmation_required(tenant: &str, what: &str, name: &str) -> Self {
        Self::new(
            StatusCode::PRECONDITION_REQUIRED,
            "ConfirmationRequired",
            format!("tenant `{tenant}` is production: {what}\nhint: re-type the workspace name: --confirm {name}"),
        )
    }

    /// 428: deleting a production tenant needs its name re-typed.
    pub fn tenant_confirmation_required(tenant: &str) -> Self {
        Self::new(
            StatusCode::PRECONDITION_REQUIRED,
            "ConfirmationRequired",
            format!("tenant `{tenant}` is production: deleting it removes all its data and keys\nhint: re-type the tenant name: --confirm {tenant}"),
        )
    }

    /// 422 with one line per broken rule.
    pub fn invalid(errors: &[ObjectError]) -> Self {
        let causes: Vec<Cause> = errors
            .iter()
            .flat_map(|oe| {
                oe.errors.iter().map(|fe| Cause {
                    object: oe.object.clone(),
                    field: fe.field.clone(),
                    message: fe.message.clone(),
                })
            })
            .collect();
        let lines: Vec<String> = errors.iter().flat_map(ObjectError::lines).collect();
        Self {
            causes,
            ..Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid",
                lines.join("\n"),
            )
        }
    }

    /// 422 for a single object and field.
    pub fn invalid_field(object: &str, field: &str, message: &str) -> Self {
        Self::invalid(&[ObjectError {
            object: object.to_string(),
            errors: vec![sng_api::FieldError::new(field, message)],
        }])
    }
}

/// What a 503 answer tells clients to wait before they retry (`Retry-After`, seconds).
pub const RETRY_AFTER_SECS: u64 = 2;

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::NotFound { kind, name } => {
                ApiError::not_found(format!("{kind} `{name}` not found"))
            }
            StoreError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "Conflict", m.clone()),
            StoreError::Invalid(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", m.clone())
            }
            StoreError::QuotaExceeded(m) => {
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, "QuotaExceeded", m.clone())
            }
            StoreError::Unavailable(_) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailable",
                "the store is busy or out of reach; retry in a moment",
            ),
            StoreError::Corrupt(_) | StoreError::Key(_) | StoreError::Db(_) => {
                tracing::error!(error = ?e, "store error");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalError",
                    "internal store error; see the server log",
                )
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = StatusBody::failure(self.code.as_u16(), self.reason, self.message, self.causes);
        if self.code == StatusCode::SERVICE_UNAVAILABLE {
            // The database is out of reach or busy: clients retry, they do not give up.
            return (
                self.code,
                [(
                    axum::http::header::RETRY_AFTER,
                    RETRY_AFTER_SECS.to_string(),
                )],
                Json(body),
            )
                .into_response();
        }
        (self.code, Json(body)).into_response()
    }
}
