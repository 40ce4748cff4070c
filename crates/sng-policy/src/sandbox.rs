//! Policies evaluated in a child process, one per policy, with a time and a memory bound.
//!
//! Rego is a small language, but one builtin call (`numbers.range(1, 100000000)`) can allocate
//! gigabytes before the interpreter looks at its clock again, and regorus can only bound memory
//! process-wide through its own global allocator. So every [`check`](Sandbox::check) and every
//! policy of an [`evaluate`](Sandbox::evaluate) runs in a fresh process — the server's own
//! binary re-executed with the hidden argument [`CHILD_ARG`], whose `main` hands over to
//! [`child_main`] — that caps its own address space (`RLIMIT_AS`) and CPU time (`RLIMIT_CPU`)
//! before reading its request, and is killed when it outlives the time limit. Whatever the
//! policy does, the caller gets a [`Decision`] back in bounded time, and the server's memory
//! and threads are not the policy's.
//!
//! The protocol is one JSON request on the child's standard input and one JSON reply on its
//! standard output. The child starts with an empty environment.
//!
//! This is the one module of the crate that does I/O; its calls block (the caller runs them
//! off its async runtime, with `spawn_blocking`).

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{Decision, PolicyInput, EVAL_TIME_LIMIT};

/// The argument that makes the server's binary act as a policy evaluator.
pub const CHILD_ARG: &str = "__sng-policy-eval";
/// Memory bound of one evaluation: bytes the child may map beyond what it had at start.
pub const MEMORY_LIMIT: u64 = 256 * MIB;
/// How long past the time limit the parent waits for the child's own timer, before killing it
/// (the child's timer gives the same error; the kill covers builtins that never look at it).
const KILL_GRACE: Duration = Duration::from_millis(500);
/// Most bytes of the child's standard error kept (enough to recognise an allocation failure).
const MAX_STDERR: usize = 16 * 1024;
const MIB: u64 = 1024 * 1024;

/// How to start a policy evaluator, and its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    program: PathBuf,
    args: Vec<String>,
    time_limit: Duration,
    memory_limit: u64,
}

impl Sandbox {
    /// An evaluator run as `program args.. TIME_MS MEMORY_BYTES`, whose `main` calls
    /// [`child_main`], with the default bounds ([`EVAL_TIME_LIMIT`], [`MEMORY_LIMIT`]).
    pub fn new(program: impl Into<PathBuf>, args: &[&str]) -> Sandbox {
        Sandbox {
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            time_limit: EVAL_TIME_LIMIT,
            memory_limit: MEMORY_LIMIT,
        }
    }

    /// The running binary re-executed with [`CHILD_ARG`] (the `sng` server), through
    /// `/proc/self/exe`: the very file this process runs, even when an upgrade has replaced or
    /// removed it on disk since.
    pub fn this_binary() -> Sandbox {
        Sandbox::new("/proc/self/exe", &[CHILD_ARG])
    }

    /// The same evaluator with other bounds.
    pub fn with_limits(mut self, time_limit: Duration, memory_limit: u64) -> Sandbox {
        self.time_limit = time_limit;
        self.memory_limit = memory_limit;
        self
    }

    /// [`crate::check`] in a child process, within the bounds.
    pub fn check(&self, rego: &str) -> Result<(), String> {
        self.call(&Request::Check { rego }).map(|_| ())
    }

    /// [`crate::evaluate`], each policy in its own child process within the bounds. A policy
    /// past a bound gets the error `the policy exceeded its time limit of 2s` (or `memory limit
    /// of 256 MiB`).
    pub fn evaluate(
        &self,
        policies: &[PolicyInput<'_>],
        input: &serde_json::Value,
    ) -> Vec<Decision> {
        policies
            .iter()
            .map(|p| {
                let (messages, error) = match self.call(&Request::Evaluate {
                    rego: p.rego,
                    input,
                }) {
                    Ok(messages) => (messages, None),
                    Err(e) => (Vec::new(), Some(e)),
                };
                Decision {
                    policy: p.name.to_string(),
                    enforcement: p.enforcement,
                    messages,
                    error,
                    result: None,
                    version: None,
                    exception: None,
                }
            })
            .collect()
    }

    fn call(&self, request: &Request<'_>) -> Result<Vec<String>, String> {
        let body =
            serde_json::to_vec(request).map_err(|e| format!("cannot encode the input: {e}"))?;
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .arg(self.time_limit.as_millis().to_string())
            .arg(self.memory_limit.to_string())
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the policy evaluator: {e}"))?;
        let mut stdin = child.stdin.take().expect("piped");
        let mut stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        // A child that dies early closes its end: the write fails, the status says why.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&body);
        });
        let errors = std::thread::spawn(move || {
            let mut kept = Vec::new();
            let _ = stderr.take(MAX_STDERR as u64).read_to_end(&mut kept);
            String::from_utf8_lossy(&kept).into_owned()
        });
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = tx.send(stdout.read_to_end(&mut out).map(|_| out));
        });
        let reply = match rx.recv_timeout(self.time_limit + KILL_GRACE) {
            Ok(reply) => reply,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(time_limit_error(self.time_limit));
            }
        };
        let status = child
            .wait()
            .map_err(|e| format!("the policy evaluator was lost: {e}"))?;
        let errors = errors.join().unwrap_or_default();
        let out = reply.map_err(|e| format!("cannot read the policy evaluator: {e}"))?;
        match serde_json::from_slice::<Reply>(&out) {
            Ok(Reply::Ok { messages }) if status.success() => Ok(messages),
            Ok(Reply::Error { error }) => Err(error),
            _ if errors.contains("memory allocation of") => {
                Err(memory_limit_error(self.memory_limit))
            }
            _ if cpu_exhausted(&status) => Err(time_limit_error(self.time_limit)),
            _ => Err(format!("the policy evaluator failed ({status})")),
        }
    }
}

fn cpu_exhausted(status: &std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt as _;
    status.signal() == Some(nix::sys::signal::Signal::SIGXCPU as i32)
}

/// `the policy exceeded its time limit of 2s`.
pub(crate) fn time_limit_error(limit: Duration) -> String {
    let ms = limit.as_millis();
    let shown = if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    };
    format!("the policy exceeded its time limit of {shown}")
}

/// `the policy exceeded its memory limit of 256 MiB`.
fn memory_limit_error(limit: u64) -> String {
    let shown = if limit.is_multiple_of(MIB) {
        format!("{} MiB", limit / MIB)
    } else {
        format!("{limit} bytes")
    };
    format!("the policy exceeded its memory limit of {shown}")
}

#[derive(Serialize)]
#[serde(tag = "op", rename_all = "camelCase")]
enum Request<'a> {
    Check {
        rego: &'a str,
    },
    Evaluate {
        rego: &'a str,
        input: &'a serde_json::Value,
    },
}

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
enum OwnedRequest {
    Check {
        rego: String,
    },
    Evaluate {
        rego: String,
        input: serde_json::Value,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Reply {
    Ok { messages: Vec<String> },
    Error { error: String },
}

/// The evaluator's `main`, called with the arguments after [`CHILD_ARG`] (`TIME_MS
/// MEMORY_BYTES`): bound this process, read one request on standard input, answer on standard
/// output.
pub fn child_main(args: &[String]) -> ExitCode {
    let (Some(time_ms), Some(memory)) = (
        args.first().and_then(|a| a.parse::<u64>().ok()),
        args.get(1).and_then(|a| a.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: {CHILD_ARG} TIME_MS MEMORY_BYTES < request.json");
        return ExitCode::from(2);
    };
    let time_limit = Duration::from_millis(time_ms);
    if let Err(e) = bound_self(time_limit, memory) {
        eprintln!("cannot bound the policy evaluator: {e}");
        return ExitCode::from(2);
    }
    let reply = match serde_json::from_reader::<_, OwnedRequest>(std::io::stdin().lock()) {
        Err(e) => Reply::Error {
            error: format!("the policy evaluator got an invalid request: {e}"),
        },
        Ok(OwnedRequest::Check { rego }) => match crate::check(&rego) {
            Ok(()) => Reply::Ok { messages: vec![] },
            Err(error) => Reply::Error { error },
        },
        Ok(OwnedRequest::Evaluate { rego, input }) => {
            let policy = PolicyInput {
                name: "",
                enforcement: crate::Enforcement::Mandatory,
                rego: &rego,
            };
            let decision = crate::evaluate_with_limit(&[policy], &input, time_limit).remove(0);
            match decision.error {
                None => Reply::Ok {
                    messages: decision.messages,
                },
                Some(error) => Reply::Error { error },
            }
        }
    };
    let mut out = std::io::stdout().lock();
    match serde_json::to_writer(&mut out, &reply).map(|_| out.flush()) {
        Ok(_) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// Cap this process: its address space at what it has now plus `memory`, its CPU time a
/// second past the time limit (a backstop: the parent kills it earlier).
fn bound_self(time_limit: Duration, memory: u64) -> nix::Result<()> {
    use nix::sys::resource::{setrlimit, Resource};
    let baseline = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmSize:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024;
    let address_space = baseline.saturating_add(memory);
    setrlimit(Resource::RLIMIT_AS, address_space, address_space)?;
    let cpu = time_limit.as_secs() + 2;
    setrlimit(Resource::RLIMIT_CPU, cpu, cpu + 1)
}
