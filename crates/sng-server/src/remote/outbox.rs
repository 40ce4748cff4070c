//! The messages of one job on their way to the server, in order: events and log chunks are
//! queued by the runner (never waiting for the network) and sent one at a time, each retried
//! until accepted. Consecutive log chunks are joined into one (up to [`MAX_CHUNK`] bytes), the
//! chunks numbered by the agent from 0 without gaps: a retried chunk keeps its number and text,
//! so the server ignores a repeat. Pure: [`Outbox`] holds the order, the sender does the I/O.

use std::collections::VecDeque;

use sng_api::agent::{JobEvent, LogChunk};

/// The most text joined into one chunk.
pub const MAX_CHUNK: usize = 64 * 1024;

/// What the runner reported.
#[derive(Debug, Clone, PartialEq)]
pub enum Queued {
    /// An event.
    Event(JobEvent),
    /// Log text (whole lines).
    Log(String),
}

/// One message to send.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// `POST …/events`.
    Event(JobEvent),
    /// `POST …/logs`.
    Log(LogChunk),
}

/// The queue of one job, in the runner's order.
#[derive(Debug, Default)]
pub struct Outbox {
    queue: VecDeque<Queued>,
    next_seq: u64,
}

impl Outbox {
    /// Queue what the runner reported.
    pub fn push(&mut self, q: Queued) {
        self.queue.push_back(q);
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The next message: an event, or the log text queued before the next event joined into
    /// one chunk of at most [`MAX_CHUNK`] bytes (a longer text alone is one chunk). The caller
    /// sends it until accepted (the same message each time), then asks for the next.
    pub fn next_message(&mut self) -> Option<Message> {
        match self.queue.pop_front()? {
            Queued::Event(e) => Some(Message::Event(e)),
            Queued::Log(mut text) => {
                while let Some(Queued::Log(more)) = self.queue.front() {
                    if text.len() + more.len() > MAX_CHUNK {
                        break;
                    }
                    text.push_str(more);
                    self.queue.pop_front();
                }
                let seq = self.next_seq;
                self.next_seq += 1;
                Some(Message::Log(LogChunk { seq, text }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(t: &str) -> Queued {
        Queued::Log(t.to_string())
    }

    fn step(s: &str) -> JobEvent {
        JobEvent::StepStarted { step: s.into() }
    }

    #[test]
    fn keeps_the_order_and_joins_logs_between_events() {
        let mut o = Outbox::default();
        o.push(Queued::Event(step("init")));
        o.push(log("a\n"));
        o.push(log("b\n"));
        o.push(Queued::Event(step("plan")));
        o.push(log("c\n"));
        let got: Vec<Message> = std::iter::from_fn(|| o.next_message()).collect();
        assert_eq!(
            got,
            vec![
                Message::Event(step("init")),
                Message::Log(LogChunk {
                    seq: 0,
                    text: "a\nb\n".into()
                }),
                Message::Event(step("plan")),
                Message::Log(LogChunk {
                    seq: 1,
                    text: "c\n".into()
                }),
            ]
        );
        assert!(o.is_empty());
    }

    #[test]
    fn numbers_chunks_without_gaps_and_bounds_their_size() {
        let mut o = Outbox::default();
        let line = format!("{}\n", "x".repeat(MAX_CHUNK / 2));
        for _ in 0..3 {
            o.push(log(&line));
        }
        o.push(log(&"y".repeat(MAX_CHUNK * 2)));
        let mut seqs = vec![];
        while let Some(Message::Log(c)) = o.next_message() {
            assert!(c.text.len() <= MAX_CHUNK || c.text.starts_with('y'));
            seqs.push(c.seq);
        }
        assert_eq!(seqs, vec![0, 1, 2, 3]);
    }

    #[test]
    fn later_pushes_continue_the_numbering() {
        let mut o = Outbox::default();
        o.push(log("a\n"));
        assert!(matches!(
            o.next_message(),
            Some(Message::Log(LogChunk { seq: 0, .. }))
        ));
        assert_eq!(o.next_message(), None);
        o.push(log("b\n"));
        assert!(matches!(
            o.next_message(),
            Some(Message::Log(LogChunk { seq: 1, .. }))
        ));
    }
}
