//! A small HTTP receiver of webhooks on 127.0.0.1 (one request per connection), and the
//! signature a receiver expects, computed independently of the server's code.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hmac::{Hmac, Mac as _};
use serde_json::Value;

/// The events of a run that applies, in order.
pub const RUN_EVENTS: [&str; 6] = [
    "run.created",
    "run.planning",
    "run.planned",
    "run.policy_checked",
    "run.applying",
    "run.completed",
];

/// One request seen by a receiver.
#[derive(Clone, Debug)]
pub struct Hit {
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    pub answered: u16,
}

impl Hit {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    pub fn external_id(&self) -> String {
        self.json()["externalId"].as_str().unwrap().to_string()
    }

    pub fn event_type(&self) -> String {
        self.json()["eventType"].as_str().unwrap().to_string()
    }

    /// The `x-sng-signature` header is the body's HMAC with `key`.
    pub fn assert_signed(&self, key: &str) {
        assert_eq!(
            self.headers["x-sng-signature"],
            expected_signature(key, &self.body)
        );
    }

    pub fn ok(&self) -> bool {
        (200..300).contains(&self.answered)
    }
}

#[derive(Default)]
pub struct Behaviour {
    /// Answer 500 to this many requests first.
    pub fail_next: usize,
    /// Answer 503 to everything.
    pub down: bool,
    pub hits: Vec<Hit>,
}

/// A small HTTP receiver on 127.0.0.1, one request per connection.
pub struct Receiver {
    pub url: String,
    pub state: Arc<Mutex<Behaviour>>,
}

impl Receiver {
    pub fn start(behaviour: Behaviour) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(behaviour));
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let _ = serve(stream, &st);
            }
        });
        Receiver { url, state }
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.state.lock().unwrap().hits.clone()
    }

    pub fn delivered(&self) -> Vec<Hit> {
        self.hits().into_iter().filter(Hit::ok).collect()
    }

    pub fn set_down(&self, down: bool) {
        self.state.lock().unwrap().down = down;
    }
}

pub fn serve(stream: TcpStream, state: &Mutex<Behaviour>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    assert!(line.starts_with("POST /hook "), "request line: {line}");
    let mut headers = HashMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    let len: usize = headers
        .get("content-length")
        .map_or(0, |v| v.parse().unwrap());
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let answered = {
        let mut st = state.lock().unwrap();
        let code = if st.down {
            503
        } else if st.fail_next > 0 {
            st.fail_next -= 1;
            500
        } else {
            200
        };
        st.hits.push(Hit {
            headers,
            body,
            answered: code,
        });
        code
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {answered} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    stream.flush()
}

/// `sha256=<hex>` of the body with the key, computed here.
pub fn expected_signature(key: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}
