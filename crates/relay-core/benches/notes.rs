//! Note replay benchmark: `cargo bench -p relay-core --bench notes`.
//!
//! Replays a synthetic session of note operations (as a reload of the JSONL would) with
//! `Notes::apply`, and compares it with the straightforward baseline that rebuilds a note's whole
//! string on every append (`content = old + added`, as a naive projection does). Prints ops/s,
//! total times and the ratio. Timings are the best of several rounds.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use relay_core::notes::{NoteOp, NoteOpKind, Notes};
use serde_json::Value;

/// Deterministic pseudo-random numbers (64-bit LCG), so every run replays the same session.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn text(rng: &mut Lcg, len: usize) -> String {
    const WORDS: [&str; 8] = [
        "parse ", "config ", "TODO ", "engine ", "ü ", "done\n", "next: ", "🙂 ",
    ];
    let mut s = String::with_capacity(len + 8);
    while s.len() < len {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    s
}

/// `ops` operations over `files` notes: 10 % writes (200–1000 bytes), 90 % appends (50–250 bytes).
fn session(ops: usize, files: usize, seed: u64) -> Vec<Value> {
    let mut rng = Lcg(seed);
    (0..ops)
        .map(|i| {
            let path = format!(
                "area{}/note{}.md",
                rng.below(10),
                rng.below(files as u64 / 10)
            );
            let write = rng.below(10) == 0;
            let (kind, len) = if write {
                (NoteOpKind::Write, 200 + rng.below(800) as usize)
            } else {
                (NoteOpKind::Append, 50 + rng.below(200) as usize)
            };
            NoteOp {
                kind,
                path,
                content: text(&mut rng, len),
                at_ms: 1_764_453_907_000 + i as i64,
            }
            .to_data()
        })
        .collect()
}

fn replay_relay(data: &[Value]) -> Notes {
    let mut notes = Notes::new();
    for d in data {
        if let Ok(op) = NoteOp::from_data(d) {
            let _ = notes.apply(&op);
        }
    }
    notes
}

fn apply_relay(ops: &[NoteOp]) -> Notes {
    let mut notes = Notes::new();
    for op in ops {
        let _ = notes.apply(op);
    }
    notes
}

/// Baseline: every append builds a new string from the old content plus the addition.
fn apply_clone(ops: &[NoteOp]) -> HashMap<String, String> {
    let mut files: HashMap<String, String> = HashMap::new();
    for op in ops {
        match op.kind {
            NoteOpKind::Write if op.content.is_empty() => {
                files.remove(&op.path);
            }
            NoteOpKind::Write => {
                files.insert(op.path.clone(), op.content.clone());
            }
            NoteOpKind::Append => {
                let old = files.get(&op.path).cloned().unwrap_or_default();
                let mut new = String::with_capacity(old.len() + op.content.len());
                new.push_str(&old);
                new.push_str(&op.content);
                if new.len() <= relay_core::notes::MAX_NOTE_BYTES {
                    files.insert(op.path.clone(), new);
                }
            }
        }
    }
    files
}

fn replay_clone(data: &[Value]) -> HashMap<String, String> {
    let ops: Vec<NoteOp> = data
        .iter()
        .filter_map(|d| NoteOp::from_data(d).ok())
        .collect();
    apply_clone(&ops)
}

fn best<T>(rounds: usize, mut f: impl FnMut() -> T) -> Duration {
    (0..rounds)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn report(name: &str, ops: usize, relay: Duration, base: Duration) {
    let rate = |d: Duration| ops as f64 / d.as_secs_f64();
    println!(
        "{name:<44} relay {:>9.3} ms ({:>12.0} ops/s) | clone-per-append {:>9.3} ms ({:>12.0} ops/s) | ratio {:>6.2}x",
        relay.as_secs_f64() * 1e3,
        rate(relay),
        base.as_secs_f64() * 1e3,
        rate(base),
        base.as_secs_f64() / relay.as_secs_f64()
    );
}

fn main() {
    let rounds = 15;
    let data = session(10_000, 200, 42);
    let ops: Vec<NoteOp> = data.iter().map(|d| NoteOp::from_data(d).unwrap()).collect();

    // Same result either way.
    let a = apply_relay(&ops);
    let b = apply_clone(&ops);
    assert_eq!(a.len(), b.len());
    for note in a.iter() {
        assert_eq!(b.get(&note.path), Some(&note.content));
    }
    let bytes: usize = a.iter().map(|n| n.bytes()).sum();
    println!(
        "session: {} ops over {} notes, {} bytes of notes at the end",
        ops.len(),
        a.len(),
        bytes
    );

    report(
        "10k ops / 200 files, parse + apply",
        ops.len(),
        best(rounds, || replay_relay(&data)),
        best(rounds, || replay_clone(&data)),
    );
    report(
        "10k ops / 200 files, apply only",
        ops.len(),
        best(rounds, || apply_relay(&ops)),
        best(rounds, || apply_clone(&ops)),
    );

    // Worst case for the baseline: one note growing by 10k appends (about 1 MB at the end).
    let one: Vec<NoteOp> = (0..10_000)
        .map(|i| NoteOp {
            kind: NoteOpKind::Append,
            path: "log.md".into(),
            content: format!("{i:>6} step done, next one queued …………\n")
                .chars()
                .take(90)
                .collect(),
            at_ms: i,
        })
        .collect();
    report(
        "10k appends / 1 file, apply only",
        one.len(),
        best(5, || apply_relay(&one)),
        best(5, || apply_clone(&one)),
    );
}
