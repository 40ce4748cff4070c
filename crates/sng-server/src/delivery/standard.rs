//! What a delivery looks like to standard receivers: the headers of the Standard Webhooks
//! specification (`webhook-id`, `webhook-timestamp`, `webhook-signature`), and the body of a
//! webhook in CloudEvents 1.0 structured mode. Pure: no I/O.
//!
//! The key of `webhook-signature`: a secret value `whsec_<base64>` is the key base64-decoded
//! (as the specification writes secrets); any other value is its own bytes as the key (a
//! receiver using a Standard Webhooks library then gives it `whsec_` + base64 of the value).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac as _};
use serde_json::{json, Value};
use sha2::Sha256;
use sng_api::WebhookFormat;

/// The prefix of a Standard Webhooks secret (the rest is the key in base64).
pub const WHSEC: &str = "whsec_";

/// The HMAC key of `webhook-signature` for a secret value (see the module's documentation).
pub fn signing_key(secret: &[u8]) -> Vec<u8> {
    secret
        .strip_prefix(WHSEC.as_bytes())
        .and_then(|rest| B64.decode(rest).ok())
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| secret.to_vec())
}

/// `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`: the value of `webhook-signature`.
pub fn signature(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1,{}", B64.encode(mac.finalize().into_bytes()))
}

/// The reverse-DNS prefix of the CloudEvents `type` of an event (`io.stackngo.sng.run.completed`).
pub const TYPE_PREFIX: &str = "io.stackngo.sng.";

/// What is sent for an event (`event`: its JSON, as the outbox holds it): the content type and
/// the body. In CloudEvents mode, a structured-mode event whose `data` is the event's JSON (an
/// event that is not the JSON object expected is sent as it is).
pub fn body(format: WebhookFormat, event: &str) -> (&'static str, String) {
    match format {
        WebhookFormat::Sng => ("application/json", event.to_string()),
        WebhookFormat::CloudEvents => match cloudevent(event) {
            Some(ce) => ("application/cloudevents+json", ce),
            None => ("application/json", event.to_string()),
        },
    }
}

/// A CloudEvents 1.0 structured-mode event of an sng event: `id` its `externalId`, `source`
/// `/tenants/{tenant}/workspaces/{workspace}`, `type` `io.stackngo.sng.{eventType}`, `time` its
/// `occurredAt`, `subject` the run (or the workspace when the event is about none), the
/// extension `correlationid`, and `data` the event itself.
fn cloudevent(event: &str) -> Option<String> {
    let data: Value = serde_json::from_str(event).ok()?;
    let field = |name: &str| data.get(name).and_then(Value::as_str);
    let (id, event_type) = (field("externalId")?, field("eventType")?);
    let (tenant, workspace) = (field("tenant")?, field("workspace")?);
    let subject = field("run").map_or_else(
        || format!("workspaces/{workspace}"),
        |run| format!("runs/{run}"),
    );
    let mut ce = json!({
        "specversion": "1.0",
        "id": id,
        "source": format!("/tenants/{tenant}/workspaces/{workspace}"),
        "type": format!("{TYPE_PREFIX}{event_type}"),
        "subject": subject,
        "datacontenttype": "application/json",
    });
    if let Some(time) = field("occurredAt") {
        ce["time"] = json!(time);
    }
    if let Some(c) = field("correlationId").filter(|c| !c.is_empty()) {
        ce["correlationid"] = json!(c);
    }
    ce["data"] = data;
    serde_json::to_string(&ce).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_match_the_specification_example() {
        // The example of the Standard Webhooks libraries (checked with PyPI `standardwebhooks`).
        let key = signing_key(b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let sig = signature(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn keys_are_whsec_base64_or_the_raw_bytes() {
        assert_eq!(signing_key(b"whsec_AAEC"), vec![0, 1, 2]);
        assert_eq!(signing_key(b"plain-key"), b"plain-key".to_vec());
        // Not base64 after the prefix, or empty: the value itself.
        assert_eq!(signing_key(b"whsec_!!"), b"whsec_!!".to_vec());
        assert_eq!(signing_key(b"whsec_"), b"whsec_".to_vec());
    }

    #[test]
    fn cloudevents_wrap_the_event_as_data() {
        let event =
            json!({"eventType": "run.completed", "externalId": "e-1", "correlationId": "c-1",
            "occurredAt": "2026-01-02T03:04:05.678Z", "schemaVersion": "1", "tenant": "t",
            "workspace": "w", "run": "run-1", "data": {}})
            .to_string();
        let (ct, body) = body(WebhookFormat::CloudEvents, &event);
        assert_eq!(ct, "application/cloudevents+json");
        let ce: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(ce["specversion"], "1.0");
        assert_eq!(ce["id"], "e-1");
        assert_eq!(ce["type"], "io.stackngo.sng.run.completed");
        assert_eq!(ce["source"], "/tenants/t/workspaces/w");
        assert_eq!(ce["subject"], "runs/run-1");
        assert_eq!(ce["time"], "2026-01-02T03:04:05.678Z");
        assert_eq!(ce["correlationid"], "c-1");
        assert_eq!(ce["data"], serde_json::from_str::<Value>(&event).unwrap());
        assert_eq!(
            super::body(WebhookFormat::Sng, &event),
            ("application/json", event)
        );
    }
}
