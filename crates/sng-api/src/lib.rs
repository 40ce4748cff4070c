//! Resource types of sng, their validation with field paths, and their JSON Schemas.
//! No I/O here: everything is pure and tested by tables.
#![forbid(unsafe_code)]

pub mod agent;
pub mod canonical;
pub mod conditions;
pub mod documents;
pub mod error;
pub mod exception;
pub mod governance;
pub mod labels;
pub mod meta;
pub mod object;
pub mod pool;
pub mod provider;
pub mod remote;
pub mod run;
pub mod schema;
pub mod secret;
pub mod selector;
mod strict;
pub mod tenant;
pub mod units;
pub mod validate;
pub mod wire;
pub mod workspace;

pub use error::{FieldError, ObjectError, ParseError};
pub use exception::PolicyException;
pub use governance::{Policy, Webhook, WebhookFormat};
pub use meta::{LocalRef, ObjectMeta, CORE_VERSION, GROUP_VERSION};
pub use object::{decode, decode_all, parse_documents, Kind, Object};
pub use provider::Provider;
pub use secret::Secret;
pub use tenant::Tenant;
pub use workspace::Workspace;
