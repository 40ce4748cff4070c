//! The outputs after an apply: from the platform's `http` backend with one `GET` of the state
//! the engine just wrote (no engine process), or with `state pull` from any backend.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use sng_api::agent::Backend;

/// What a state says after the apply.
#[derive(Debug, Clone, PartialEq)]
pub struct StateRead {
    /// `{name: {value, type, sensitive}}`.
    pub outputs: Value,
    /// The state's serial.
    pub serial: Option<i64>,
}

/// Outputs and serial of a state document (`state pull` prints one, the backend serves one).
pub fn of_state(state: &Value) -> StateRead {
    StateRead {
        outputs: state
            .get("outputs")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
        serial: state.get("serial").and_then(Value::as_i64),
    }
}

fn client() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(reqwest::Client::new)
}

/// The state from the `http` backend, read with the run's credentials before `deadline` (at
/// most a minute). No state yet (`204`): no outputs. The error says why (the caller falls back
/// to `state pull`).
pub async fn from_http_backend(
    backend: &Backend,
    password: Option<&str>,
    deadline: Instant,
) -> Result<StateRead, String> {
    let Backend::Http { address, username } = backend else {
        return Err("the state is not in the platform's http backend".into());
    };
    let left = deadline.saturating_duration_since(Instant::now());
    let response = client()
        .get(address)
        .basic_auth(username, password)
        .timeout(left.min(Duration::from_secs(60)))
        .send()
        .await
        .map_err(|e| format!("cannot read the state: {e}"))?;
    match response.status().as_u16() {
        204 => Ok(StateRead {
            outputs: Value::Object(Map::new()),
            serial: None,
        }),
        200 => {
            let body = response
                .bytes()
                .await
                .map_err(|e| format!("cannot read the state: {e}"))?;
            let state: Value = serde_json::from_slice(&body)
                .map_err(|_| "the state backend served something that is not JSON".to_string())?;
            Ok(of_state(&state))
        }
        code => Err(format!("the state backend answered {code}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_state_gives_its_outputs_and_serial() {
        let table = [
            (
                json!({"serial": 3, "outputs": {"a": {"value": 1, "type": "number"}}}),
                json!({"a": {"value": 1, "type": "number"}}),
                Some(3),
            ),
            (json!({"serial": 1}), json!({}), Some(1)),
            (json!({}), json!({}), None),
        ];
        for (state, outputs, serial) in table {
            assert_eq!(of_state(&state), StateRead { outputs, serial }, "{state}");
        }
    }
}
