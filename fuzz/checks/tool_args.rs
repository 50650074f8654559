//! The tool-argument decoders (`relay_core::args`): every tool's `decode` and `prepare`.
//!
//! Input: bytes that parse as JSON are one tool call's arguments, decoded for every tool (a
//! two-element array `[tool index, arguments]` picks one tool); any other bytes drive a
//! generator that picks a tool and builds arguments from its parameter names, their aliases,
//! near-misses and unknown names, with values of every JSON type (integers on the edges, floats,
//! long and empty strings, arrays with wrong elements).
//!
//! Properties checked, for each tool:
//! - `decode` and `prepare` never panic;
//! - every error is a tool error that starts with `<tool>: ` and names what is wrong: an argument
//!   (`argument "x"`, `unknown argument "x"`, `arguments "a" and "b"`, which are parameters of the
//!   tool or keys of the call) or the arguments as a whole (`arguments must be an object`);
//! - `prepare` of an object gives only the tool's parameters, keeps every non-null value of a
//!   parameter given by name, renames every alias given alone, and is idempotent; when it refuses, `decode`
//!   refuses with the same text; `decode` of what `prepare` gives decides like `decode` of the
//!   original (the same success, or the same error text);
//! - arguments that are not an object pass `prepare` unchanged; `null` decodes like `{}`; any
//!   other non-object is refused by `decode`.
use arbitrary::{Result, Unstructured};
use relay_core::args::{
    self, decode, names_of, prepare, ContextHandoff, GetContextRemaining, HistoryListItems,
    HistoryListWindows, HistoryReadItem, HistorySearchContents, Memory, NewContext,
    NotesAppendToFile, NotesListFilesByPrefix, NotesReadFile, NotesSearchContents, NotesWriteFile,
    ALIASES, TOOL_NAMES,
};
use relay_core::ToolOutput;
use serde_json::{json, Map, Value};

/// The target's body: panics when a property does not hold.
pub fn check(data: &[u8]) {
    match serde_json::from_slice::<Value>(data) {
        Ok(Value::Array(pair)) if pair.len() == 2 && pair.first().is_some_and(Value::is_u64) => {
            let i = pair[0].as_u64().unwrap_or(0) as usize % TOOL_NAMES.len();
            check_tool(TOOL_NAMES[i], &pair[1]);
        }
        Ok(v) => {
            for tool in TOOL_NAMES {
                check_tool(tool, &v);
            }
        }
        Err(_) => {
            let mut u = Unstructured::new(data);
            if let Ok((tool, v)) = gen_call(&mut u) {
                check_tool(tool, &v);
            }
        }
    }
}

/// `decode` for the tool named `tool`, as a comparable outcome (`Debug` of the value, or the
/// error text).
fn decode_any(tool: &str, v: &Value) -> std::result::Result<String, ToolOutput> {
    fn d<T: args::ToolArgs + std::fmt::Debug>(
        tool: &str,
        v: &Value,
    ) -> std::result::Result<String, ToolOutput> {
        decode::<T>(tool, v).map(|t| format!("{t:?}"))
    }
    match tool {
        args::HISTORY_LIST_WINDOWS => d::<HistoryListWindows>(tool, v),
        args::HISTORY_LIST_ITEMS => d::<HistoryListItems>(tool, v),
        args::HISTORY_READ_ITEM => d::<HistoryReadItem>(tool, v),
        args::HISTORY_SEARCH_CONTENTS => d::<HistorySearchContents>(tool, v),
        args::NOTES_LIST_FILES_BY_PREFIX => d::<NotesListFilesByPrefix>(tool, v),
        args::NOTES_READ_FILE => d::<NotesReadFile>(tool, v),
        args::NOTES_SEARCH_CONTENTS => d::<NotesSearchContents>(tool, v),
        args::NOTES_APPEND_TO_FILE => d::<NotesAppendToFile>(tool, v),
        args::NOTES_WRITE_FILE => d::<NotesWriteFile>(tool, v),
        args::NEW_CONTEXT => d::<NewContext>(tool, v),
        args::CONTEXT_HANDOFF => d::<ContextHandoff>(tool, v),
        args::GET_CONTEXT_REMAINING => d::<GetContextRemaining>(tool, v),
        args::MEMORY => d::<Memory>(tool, v),
        other => panic!("no decoder for {other}"),
    }
}

fn check_tool(tool: &str, v: &Value) {
    let names = names_of(tool).expect("every tool has names");
    let decoded = decode_any(tool, v);
    if let Err(e) = &decoded {
        check_error(tool, names, v, e);
    }
    let prepared = prepare(tool, v);
    let Value::Object(map) = v else {
        assert_eq!(
            prepared.as_ref().ok(),
            Some(v),
            "{tool}: prepare changed a non-object"
        );
        if v.is_null() {
            assert_eq!(
                decoded,
                decode_any(tool, &json!({})),
                "{tool}: null decodes unlike {{}}"
            );
        } else {
            assert!(decoded.is_err(), "{tool}: decoded a non-object {v}");
        }
        return;
    };
    match prepared {
        Err(e) => {
            check_error(tool, names, v, &e);
            assert_eq!(
                decoded.as_ref().map_err(|d| &d.text).err(),
                Some(&e.text),
                "{tool}: prepare refused {v}, decode did not say the same"
            );
        }
        Ok(p) => {
            let Value::Object(pm) = &p else {
                panic!("{tool}: prepare of an object gave {p}")
            };
            for k in pm.keys() {
                assert!(names.accepted.contains(k), "{tool}: prepare kept {k:?}");
            }
            for (k, val) in map {
                // A `null` is an absent argument: an alias given beside it supplies the value.
                if names.accepted.contains(k) && !val.is_null() {
                    assert_eq!(pm.get(k), Some(val), "{tool}: prepare changed {k:?}");
                }
            }
            for (t, alias, param) in ALIASES {
                let given = map.get(*alias).is_some_and(|a| !a.is_null());
                if *t == tool && given && !map.contains_key(*param) {
                    assert_eq!(
                        pm.get(*param),
                        map.get(*alias),
                        "{tool}: alias {alias:?} not renamed to {param:?}"
                    );
                }
            }
            assert_eq!(
                prepare(tool, &p).as_ref().ok(),
                Some(&p),
                "{tool}: prepare is not idempotent"
            );
            assert_eq!(
                decode_any(tool, &p),
                decoded,
                "{tool}: decode of prepare's output decides differently"
            );
        }
    }
}

/// The error names the tool and the offending argument (a parameter or a key of the call).
fn check_error(tool: &str, names: &args::Names, v: &Value, e: &ToolOutput) {
    assert!(e.is_error, "{tool}: an error that is not a tool error");
    let prefix = format!("{tool}: ");
    let rest = e
        .text
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{tool}: error without the tool name: {:?}", e.text));
    if rest.starts_with("arguments must be an object, got ") {
        assert!(
            !v.is_object() && !v.is_null(),
            "{tool}: {:?} for {v}",
            e.text
        );
        return;
    }
    let keys: Vec<&String> = v
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    let named = |n: &str| {
        names.accepted.iter().any(|a| a == n)
            || keys.iter().any(|k| {
                *k == n
                    || n.strip_suffix('…').is_some_and(|head| {
                        k.starts_with(head) && k.chars().count() > head.chars().count()
                    })
            })
    };
    // A name is quoted as a JSON string (cut with `…` after 64 characters).
    let quoted = |s: &str| -> Option<String> {
        serde_json::Deserializer::from_str(s)
            .into_iter::<String>()
            .next()?
            .ok()
    };
    let name = if let Some(r) = rest.strip_prefix("unknown argument ") {
        quoted(r)
    } else if let Some(r) = rest.strip_prefix("arguments ") {
        quoted(r)
    } else if let Some(r) = rest.strip_prefix("argument ") {
        quoted(r).map(|n| match n.split_once('[') {
            Some((base, _)) if n.ends_with(']') => base.to_string(),
            _ => n,
        })
    } else {
        None
    };
    let name = name.unwrap_or_else(|| panic!("{tool}: error names no argument: {:?}", e.text));
    assert!(
        named(&name),
        "{tool}: error names {name:?}, neither a parameter nor a key of {v}: {:?}",
        e.text
    );
}

// ---------------------------------------------------------------------------------------------
// Structured generation
// ---------------------------------------------------------------------------------------------

fn gen_call(u: &mut Unstructured<'_>) -> Result<(&'static str, Value)> {
    let tool = *u.choose(&TOOL_NAMES)?;
    if u.ratio(1, 32)? {
        return Ok((tool, gen_value(u, 0)?));
    }
    let names = names_of(tool).expect("every tool has names");
    let aliases: Vec<&str> = ALIASES
        .iter()
        .filter(|(t, _, _)| *t == tool)
        .map(|(_, a, _)| *a)
        .collect();
    let mut obj = Map::new();
    let n = u.int_in_range(0..=6)?;
    for _ in 0..n {
        let key = match u.int_in_range(0..=9u8)? {
            0..=5 if !names.accepted.is_empty() => u.choose(&names.accepted)?.clone(),
            6 | 7 if !aliases.is_empty() => u.choose(&aliases)?.to_string(),
            8 => {
                // A near-miss of a parameter: one character changed, dropped or added.
                let base = if names.accepted.is_empty() {
                    "path".to_string()
                } else {
                    u.choose(&names.accepted)?.clone()
                };
                let mut chars: Vec<char> = base.chars().collect();
                let i = u.int_in_range(0..=chars.len())?;
                match u.int_in_range(0..=2u8)? {
                    0 if i < chars.len() => {
                        chars.remove(i);
                    }
                    1 if i < chars.len() => chars[i] = char::from(u.int_in_range(b'a'..=b'z')?),
                    _ => chars.insert(i, char::from(u.int_in_range(b'a'..=b'z')?)),
                }
                chars.into_iter().collect()
            }
            _ => text(u, 12)?,
        };
        let value = gen_value(u, 0)?;
        obj.insert(key, value);
    }
    Ok((tool, Value::Object(obj)))
}

fn text(u: &mut Unstructured<'_>, max: usize) -> Result<String> {
    let n = u.int_in_range(0..=max)?;
    Ok(String::from_utf8_lossy(u.bytes(n.min(u.len()))?).into_owned())
}

fn gen_value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    const NUMBERS: [f64; 10] = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2.0,
        1e300,
        -1e300,
        9_007_199_254_740_993.0,
        1.8446744073709552e19,
    ];
    Ok(match u.int_in_range(0..=13u8)? {
        0 => Value::Null,
        1 => json!(u.arbitrary::<bool>()?),
        2 | 3 => json!(u.int_in_range(-3..=300i64)?),
        4 => json!(u.arbitrary::<i64>()?),
        5 => json!(u.arbitrary::<u64>()?),
        6 => json!(*u.choose(&NUMBERS)?),
        7 => json!(*u.choose(&[
            "",
            " ",
            "\n",
            "a",
            "/abs/path",
            "user",
            "assistant",
            "tool",
            "toolResult",
            "-1"
        ])?),
        8 | 9 => json!(text(u, 40)?),
        10 => json!("x".repeat(u.int_in_range(0..=100_000)?)),
        11 if depth < 2 => {
            let n = u.int_in_range(0..=4)?;
            let mut items = Vec::new();
            for _ in 0..n {
                items.push(gen_value(u, depth + 1)?);
            }
            Value::Array(items)
        }
        12 if depth < 2 => {
            let mut m = Map::new();
            m.insert(text(u, 4)?, gen_value(u, depth + 1)?);
            Value::Object(m)
        }
        _ => json!(u.int_in_range(1..=10i64)?),
    })
}
