//! Replaying persisted note operations.
//!
//! Input: bytes that parse as JSON are the operations themselves (an array of `data` objects, or
//! one value); any other bytes drive a generator of operations whose kinds, paths (built from
//! segments such as `a`, `.`, `..`, empty, `/`, `\`, control characters), contents (short random
//! text; in one input in 4,096, up to three sizes around `MAX_NOTE_BYTES`) and timestamps (around
//! ±`MAX_TIMESTAMP_MS`, floats, strings) sit on the edges of what `NoteOp::from_data` and
//! `Notes::apply` accept.
//!
//! Properties checked, after every operation:
//! - nothing panics;
//! - an accepted `data` round-trips: `from_data(op.to_data()) == op`;
//! - `apply` succeeds or fails exactly as a reference model predicts (too large, empty append),
//!   and a success changes exactly the named note the way the model says;
//! - a rejected operation (by `from_data` or by `apply`) leaves the notes identical, both as a
//!   value and as `list_files_by_prefix({})` output; an operation built directly (bypassing
//!   `from_data`) that `from_data` would reject is rejected by `apply` too;
//! - every stored note is non-empty, at most `MAX_NOTE_BYTES`, and has a valid path.
//!
//! And at the end: the listing counts every note; each listed note reads back in full with
//! `read_file` (content and line count agree) and, up to 64 KiB, can be found by
//! `search_contents`.

use arbitrary::{Result, Unstructured};
use relay_core::args::MAX_RESULT_BYTES;
use relay_core::notes::{
    count_lines, validate_replayed_path, NoteError, NoteOp, NoteOpKind, Notes, MAX_NOTE_BYTES,
    MAX_PATH_BYTES, MAX_TIMESTAMP_MS,
};
use relay_core::ToolOutput;
use serde_json::{json, Map, Value};

/// Operations replayed per input (each may carry up to ~1 MB of content).
const MAX_OPS: usize = 32;
/// Notes larger than this are not searched for at the end (keeps runs fast).
const SEARCH_CHECK_MAX_BYTES: usize = 64 * 1024;

/// The target's body: panics when a property does not hold.
pub fn check(data: &[u8]) {
    let ops: Vec<Value> = match serde_json::from_slice::<Value>(data) {
        Ok(Value::Array(items)) => items,
        Ok(other) => vec![other],
        Err(_) => generate(&mut Unstructured::new(data), big_by_hash(data)).unwrap_or_default(),
    };
    let mut notes = Notes::new();
    for v in ops.iter().take(MAX_OPS) {
        replay(&mut notes, v);
        check_invariants(&notes);
    }
    check_tools(&notes);
}

fn replay(notes: &mut Notes, v: &Value) {
    let before = notes.clone();
    let listing = listing(notes);
    match NoteOp::from_data(v) {
        Err(e) => {
            assert!(!e.to_string().is_empty());
            // The same operation built without `from_data`'s checks must be refused by `apply`.
            if let Some(op) = direct_op(v) {
                assert!(
                    notes.apply(&op).is_err(),
                    "from_data rejected {v} ({e}) but apply accepted it"
                );
                assert_unchanged(notes, &before, &listing, "apply of a from_data-rejected op");
            }
        }
        Ok(op) => {
            assert_eq!(
                NoteOp::from_data(&op.to_data()).as_ref(),
                Ok(&op),
                "to_data/from_data round trip"
            );
            let existing = notes.get(&op.path).map(|n| n.content.clone());
            let predicted = predict(&op, existing.as_deref());
            let result = notes.apply(&op);
            match (&result, &predicted) {
                (Ok(()), Ok(())) => {}
                (Err(NoteError::TooLarge { .. }), Err(Expect::TooLarge))
                | (Err(NoteError::EmptyAppend(_)), Err(Expect::EmptyAppend)) => {}
                _ => panic!("apply({op:?}) gave {result:?}, the model predicts {predicted:?}"),
            }
            if result.is_err() {
                assert_unchanged(notes, &before, &listing, "rejected apply");
                return;
            }
            let was = usize::from(existing.is_some());
            match (op.kind, op.content.is_empty()) {
                (NoteOpKind::Write, true) => {
                    assert!(notes.get(&op.path).is_none(), "empty write must delete");
                    assert_eq!(notes.len(), before.len() - was);
                }
                (kind, _) => {
                    let note = notes.get(&op.path).expect("note after a successful op");
                    let want = match kind {
                        NoteOpKind::Write => op.content.clone(),
                        NoteOpKind::Append => existing.unwrap_or_default() + &op.content,
                    };
                    assert!(
                        note.content == want,
                        "content of {:?} after {kind:?}",
                        op.path
                    );
                    assert_eq!(note.updated_ms, op.at_ms);
                    assert_eq!(note.path, op.path);
                    assert_eq!(notes.len(), before.len() + 1 - was);
                }
            }
            // No other note changed.
            for n in before.iter().filter(|n| n.path != op.path) {
                assert_eq!(
                    notes.get(&n.path),
                    Some(n),
                    "unrelated note {:?} changed",
                    n.path
                );
            }
        }
    }
}

#[derive(Debug)]
enum Expect {
    TooLarge,
    EmptyAppend,
}

fn predict(op: &NoteOp, existing: Option<&str>) -> std::result::Result<(), Expect> {
    match op.kind {
        NoteOpKind::Write if op.content.len() > MAX_NOTE_BYTES => Err(Expect::TooLarge),
        NoteOpKind::Write => Ok(()),
        NoteOpKind::Append if op.content.is_empty() => Err(Expect::EmptyAppend),
        NoteOpKind::Append if existing.map_or(0, str::len) + op.content.len() > MAX_NOTE_BYTES => {
            Err(Expect::TooLarge)
        }
        NoteOpKind::Append => Ok(()),
    }
}

/// The operation `v` describes when its fields have the right JSON types, without any of
/// `from_data`'s validation.
fn direct_op(v: &Value) -> Option<NoteOp> {
    let kind = match v.get("kind")?.as_str()? {
        "write" => NoteOpKind::Write,
        "append" => NoteOpKind::Append,
        _ => return None,
    };
    Some(NoteOp {
        kind,
        path: v.get("path")?.as_str()?.to_string(),
        content: v.get("content")?.as_str()?.to_string(),
        at_ms: v.get("atMs")?.as_i64()?,
    })
}

fn listing(notes: &Notes) -> String {
    let out = notes.list_files_by_prefix(&json!({}));
    assert!(
        !out.is_error,
        "list_files_by_prefix {{}} failed: {}",
        out.text
    );
    out.text
}

fn assert_unchanged(notes: &Notes, before: &Notes, listing_before: &str, what: &str) {
    assert!(notes == before, "{what} changed the notes");
    assert_eq!(listing(notes), listing_before, "{what} changed the listing");
}

fn check_invariants(notes: &Notes) {
    for n in notes.iter() {
        assert!(
            n.bytes() <= MAX_NOTE_BYTES,
            "{:?} is {} bytes",
            n.path,
            n.bytes()
        );
        assert!(!n.content.is_empty(), "empty note {:?} stored", n.path);
        assert!(
            validate_replayed_path(&n.path).is_ok(),
            "invalid path {:?} stored",
            n.path
        );
    }
}

fn ok_json(out: ToolOutput, what: &str) -> Value {
    assert!(!out.is_error, "{what} failed: {}", out.text);
    serde_json::from_str(&out.text)
        .unwrap_or_else(|e| panic!("{what}: output is not JSON ({e}): {:?}", out.text))
}

fn check_tools(notes: &Notes) {
    let default = ok_json(notes.list_files_by_prefix(&json!({})), "list {}");
    assert_eq!(default["total"], json!(notes.len()));
    let all = ok_json(
        notes.list_files_by_prefix(&json!({ "limit": 1_000_000 })),
        "list with a large limit",
    );
    let files = all["files"].as_array().expect("files");
    assert_eq!(files.len(), notes.len());
    assert_eq!(all["truncated"], json!(false));
    for f in files {
        let path = f["path"].as_str().expect("path");
        let note = notes.get(path).expect("listed note exists");
        assert_eq!(f["bytes"], json!(note.bytes()));
        assert!(note.bytes() <= MAX_NOTE_BYTES);
        // A reply holds at most MAX_RESULT_BYTES and says where to continue: following it reads
        // the whole note back.
        let mut got = String::new();
        let mut call = json!({ "path": path });
        let mut position = (0i64, 0i64);
        loop {
            let out = notes.read_file(&call);
            assert!(
                out.text.len() <= MAX_RESULT_BYTES,
                "read_file reply of {} bytes",
                out.text.len()
            );
            let read = ok_json(out, "read_file of a listed note");
            assert_eq!(read["total_lines"], json!(count_lines(&note.content)));
            got.push_str(read["content"].as_str().expect("content"));
            let Some(next) = read["next_start_line"].as_i64() else {
                break;
            };
            let offset = read["next_offset_chars"].as_i64().unwrap_or(0);
            assert!(
                (next, offset) > position,
                "read_file does not move on: {position:?} then {:?}",
                (next, offset)
            );
            position = (next, offset);
            if offset > 0 {
                call = json!({ "path": path, "start_line": next, "offset_chars": offset });
            } else {
                got.push('\n');
                call = json!({ "path": path, "start_line": next });
            }
        }
        let whole = note.content.strip_suffix('\n').unwrap_or(&note.content);
        assert!(got == whole, "read_file of {path:?} lost content");
        assert_eq!(f["lines"], json!(count_lines(&note.content)));

        // Searching a huge note made of line breaks visits every line: small notes only.
        if note.bytes() > SEARCH_CHECK_MAX_BYTES {
            continue;
        }
        let query: String = note.content.chars().take(8).collect();
        let found = ok_json(
            notes.search_contents(&json!({ "query": query, "path_prefix": path })),
            "search_contents for a note's own text",
        );
        assert!(
            found["match_count"].as_u64().unwrap_or(0) >= 1,
            "{query:?} not found in {path:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Structured generation
// ---------------------------------------------------------------------------------------------

/// At most this many generated contents per input are near `MAX_NOTE_BYTES`.
const MAX_BIG_CONTENTS: usize = 3;
/// One generated input in this many may hold contents near `MAX_NOTE_BYTES`: those whose first
/// byte is 0 (the ratio reads one byte) and whose hash passes [`big_by_hash`]. A big input costs
/// tens of milliseconds in the fuzz build (every operation clones and lists the notes, and the end
/// reads each big note back page by page: about 50 pages of JSON made and parsed for three 1 MB
/// notes), a small one about 0.15 ms.
const BIG_INPUT_ONE_IN: u32 = 256;

/// One input in this many passes [`big_by_hash`].
const BIG_HASH_ONE_IN: u64 = 16;

/// The second condition for big contents: a hash (FNV-1a) of the whole input. libFuzzer keeps the
/// inputs that reach big notes (they cover more) and mutates them; a gate on one byte survived
/// most mutations (a third of the corpus began with the byte that allowed big notes, and the target
/// ran at 200 inputs a second), a hash of the whole input survives about one in
/// `BIG_HASH_ONE_IN`.
fn big_by_hash(data: &[u8]) -> bool {
    let hash = data.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    hash % BIG_HASH_ONE_IN == 0
}

fn generate(u: &mut Unstructured<'_>, big_by_hash: bool) -> Result<Vec<Value>> {
    let mut ops = Vec::new();
    let mut big_left = if u.ratio(1, BIG_INPUT_ONE_IN)? && big_by_hash {
        MAX_BIG_CONTENTS
    } else {
        0
    };
    while !u.is_empty() && ops.len() < MAX_OPS {
        ops.push(gen_op(u, &mut big_left)?);
    }
    Ok(ops)
}

/// The operations a generated input decodes to, and whether its hash allows big contents (for
/// relay-core's `fuzz_replay` test).
#[allow(dead_code)]
pub fn decoded(data: &[u8]) -> (Vec<Value>, bool) {
    (
        generate(&mut Unstructured::new(data), big_by_hash(data)).unwrap_or_default(),
        big_by_hash(data),
    )
}

fn small_string(u: &mut Unstructured<'_>, max: usize) -> Result<String> {
    let n = u.int_in_range(0..=max)?;
    Ok(String::from_utf8_lossy(u.bytes(n.min(u.len()))?).into_owned())
}

fn gen_op(u: &mut Unstructured<'_>, big_left: &mut usize) -> Result<Value> {
    let mut obj = Map::new();
    // kind
    match u.int_in_range(0..=7u8)? {
        0..=2 => obj.insert("kind".into(), json!("write")),
        3..=5 => obj.insert("kind".into(), json!("append")),
        6 => obj.insert("kind".into(), json!(small_string(u, 8)?)),
        _ => obj.insert("kind".into(), gen_junk(u)?),
    };
    // path
    if u.ratio(15, 16)? {
        obj.insert("path".into(), gen_path(u)?);
    }
    // content
    if u.ratio(31, 32)? {
        obj.insert("content".into(), gen_content(u, big_left)?);
    }
    // atMs
    if u.ratio(31, 32)? {
        let m = MAX_TIMESTAMP_MS;
        let v = match u.int_in_range(0..=9u8)? {
            0..=3 => json!(u.int_in_range(0..=2_000_000_000_000i64)?),
            4 => json!(u.arbitrary::<i64>()?),
            5 => json!(*u.choose(&[m, -m, m + 1, -m - 1, i64::MIN, i64::MAX, 0])?),
            6 => json!(*u.choose(&[1.0f64, 1.5, -0.0, 1e300, m as f64, (m as f64) * 1.0000001])?),
            7 => json!(u.arbitrary::<u64>()?),
            _ => gen_junk(u)?,
        };
        obj.insert("atMs".into(), v);
    }
    if u.ratio(1, 16)? {
        obj.insert(small_string(u, 6)?, gen_junk(u)?);
    }
    Ok(Value::Object(obj))
}

fn gen_path(u: &mut Unstructured<'_>) -> Result<Value> {
    const SEGMENTS: [&str; 16] = [
        "a", "b.md", "notes", "plan.md", ".", "..", "", "\u{0}", "\n", "\t", "\u{7f}", "\u{85}",
        "\\", "é", "x y", "...",
    ];
    match u.int_in_range(0..=15u8)? {
        0 => return gen_junk(u),
        1 => {
            // Around the length limit.
            let len = MAX_PATH_BYTES - 1 + u.int_in_range(0..=2)?;
            return Ok(json!("p".repeat(len)));
        }
        2 => return Ok(json!(small_string(u, 12)?)),
        _ => {}
    }
    let mut path = String::new();
    if u.ratio(1, 8)? {
        path.push('/');
    }
    let n = u.int_in_range(1..=4)?;
    for i in 0..n {
        if i > 0 {
            path.push('/');
        }
        // Favour a few valid names so that notes get reused and appended to.
        let seg = if u.ratio(2, 3)? {
            *u.choose(&SEGMENTS[..4])?
        } else {
            *u.choose(&SEGMENTS)?
        };
        path.push_str(seg);
    }
    if u.ratio(1, 16)? {
        path.push('/');
    }
    Ok(json!(path))
}

fn gen_content(u: &mut Unstructured<'_>, big_left: &mut usize) -> Result<Value> {
    Ok(match u.int_in_range(0..=15u8)? {
        0 => json!(""),
        1 => gen_junk(u)?,
        2 if *big_left > 0 => {
            *big_left -= 1;
            let len = *u.choose(&[
                MAX_NOTE_BYTES - 1,
                MAX_NOTE_BYTES,
                MAX_NOTE_BYTES + 1,
                MAX_NOTE_BYTES / 2,
                MAX_NOTE_BYTES / 2 + 1,
            ])?;
            let fill = *u.choose(&["x", "\n", "é"])?;
            // "é" is two bytes: keep the byte length close to `len`.
            let mut s = fill.repeat(len / fill.len());
            if s.len() < len && fill.len() > 1 {
                s.push('y');
            }
            json!(s)
        }
        _ => json!(small_string(u, 40)?),
    })
}

fn gen_junk(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=5u8)? {
        0 => Value::Null,
        1 => json!(u.arbitrary::<bool>()?),
        2 => json!(u.arbitrary::<i32>()?),
        3 => json!([]),
        4 => json!({}),
        _ => json!(small_string(u, 6)?),
    })
}
