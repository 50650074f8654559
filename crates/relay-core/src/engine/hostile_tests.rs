//! Hostile input at the engine: every tool's every argument with each wrong JSON type and with a
//! 100 MB string, through what the extension does with a tool call (`args::prepare`, the
//! extension's `prepareArguments`, then the engine's tool or `context_handoff` steps). Each gets a
//! clear error naming the tool and the argument, within a bounded size, and changes nothing.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::tests::{engine_configured, moment, Branch};
use super::*;
use crate::args;

const SID: &str = "01a2-hostile-session";

/// An enforcing engine with one window of history and two notes.
fn engine() -> Engine {
    let mut e = engine_configured(SID, json!({"budget": {"mode": "enforce"}}));
    let mut b = Branch::new();
    e.append(&[
        b.entry(json!({"type":"message","message":{"role":"user","content":"go"}})),
        b.entry(json!({"type":"custom","customType":"relay/note","data":
            {"kind":"write","path":"plan.md","content":"keep\n","atMs":1_764_449_000_000_i64}})),
        b.entry(json!({"type":"message","message":{"role":"assistant",
            "content":[{"type":"text","text":"ok"}],"stopReason":"stop","usage":{"totalTokens":5000}}})),
    ]);
    e
}

/// What the model can observe of the engine's state: notes, windows, the policy's memory.
fn state(e: &Engine) -> String {
    let notes = e.mirror.notes.list_files_by_prefix(&json!({})).text;
    let windows = e.mirror.history.list_windows(&json!({})).text;
    format!("{notes}\n{windows}\n{:?}", e.mirror.policy_state())
}

/// A valid value of a schema property (so that a call fails only on the argument under test).
fn valid(e: &Engine, name: &str, schema: &Value) -> Value {
    match name {
        "role" => json!("user"),
        "launch_prompt" => json!("/work/project/prompt.md"),
        // The memory tool's view (every other argument is then one view does not take).
        "command" => json!("view"),
        "view_range" => json!([1, 2]),
        "window_id" => {
            let windows: Value =
                serde_json::from_str(&e.mirror.history.list_windows(&json!({})).text).unwrap();
            windows["windows"][0]["window_id"].clone()
        }
        _ => match schema["type"].as_str() {
            Some("string") => json!("x"),
            Some("integer") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!(["a.md"]),
            other => panic!("{name}: no valid value for type {other:?}"),
        },
    }
}

/// Every JSON type a value can have except the one the schema declares (null is an absent
/// argument, for Pi as for Relay). An array holding a wrong element type is wrong for arrays.
fn wrong_values(schema: &Value) -> Vec<(&'static str, Value)> {
    let all = [
        ("string", json!("not-a-number")),
        ("integer", json!(7)),
        ("float", json!(1.5)),
        ("boolean", json!(true)),
        ("array", json!([])),
        ("object", json!({"a": 1})),
    ];
    let declared = schema["type"].as_str().unwrap();
    let mut out: Vec<(&'static str, Value)> = all
        .into_iter()
        .filter(|(kind, _)| match declared {
            "integer" => *kind != "integer",
            "array" => *kind != "array",
            d => *kind != d,
        })
        .collect();
    if declared == "array" {
        out.push(("array of integers", json!([1])));
        out.push(("array of objects", json!([{}])));
    }
    out
}

/// One call as the extension makes it: `prepareArguments` (aliases, unknown names), then the tool
/// (for `context_handoff`, its first two steps: the arguments, then the render).
fn call(e: &mut Engine, tool: &str, args: &Value) -> (bool, String) {
    let m = moment(Some(10_000));
    let prepared = match args::prepare(tool, args) {
        Ok(p) => p,
        Err(out) => return (out.is_error, out.text),
    };
    if tool == args::CONTEXT_HANDOFF {
        let parsed = match e.handoff_begin(&prepared, &m) {
            Ok(p) => p,
            Err(reply) => return (reply.is_error, reply.text),
        };
        let git = GitFacts {
            repo_root: None,
            branch: None,
            head: None,
            state: crate::handoff::GitState::NoGit,
            workspace: None,
        };
        let path = format!("/work/project/.ai-work/handoffs/{SID}-1.md");
        return match e.handoff_render(&parsed, &git, None, None, &path, 1, &m) {
            Ok((markdown, _, _)) => (false, markdown),
            Err(reply) => (reply.is_error, reply.text),
        };
    }
    let reply = e.tool(tool, &prepared, &m);
    (reply.is_error, reply.text)
}

fn schemas() -> Map<String, Value> {
    let Value::Object(all) = args::parameter_schemas() else {
        panic!("the schemas are an object")
    };
    assert_eq!(all.len(), args::TOOL_NAMES.len());
    all
}

fn base_args(e: &Engine, schema: &Value) -> Map<String, Value> {
    let mut base = Map::new();
    for r in schema["required"].as_array().into_iter().flatten() {
        let r = r.as_str().unwrap();
        let v = valid(e, r, &schema["properties"][r]);
        assert!(!v.is_null(), "{r}");
        base.insert(r.into(), v);
    }
    base
}

/// Every tool × every argument × every wrong JSON type: an error that starts with the tool and
/// the argument's name, at most 512 bytes, and the engine's state unchanged.
#[test]
fn every_argument_of_every_tool_refuses_every_wrong_type_by_name() {
    let mut e = engine();
    let before = state(&e);
    let mut table = String::new();
    let mut cases = 0;
    for (tool, schema) in schemas() {
        let props = schema["properties"].as_object().unwrap();
        // A tool without parameters refuses any argument by its name.
        if props.is_empty() {
            let (is_error, text) = call(&mut e, &tool, &json!({"x": 1}));
            assert!(is_error, "{tool}: {text}");
            assert!(
                text.starts_with(&format!("{tool}: unknown argument \"x\"")),
                "{text}"
            );
            table.push_str(&format!("{tool} x=1: {text}\n"));
            cases += 1;
        }
        for (name, prop) in props {
            for (kind, wrong) in wrong_values(prop) {
                let mut args = base_args(&e, &schema);
                args.insert(name.clone(), wrong.clone());
                let (is_error, text) = call(&mut e, &tool, &Value::Object(args));
                assert!(
                    is_error,
                    "{tool}.{name} = {wrong} ({kind}) was accepted: {text}"
                );
                assert!(
                    text.starts_with(&format!("{tool}: argument \"{name}")),
                    "{tool}.{name} = {wrong} ({kind}): {text}"
                );
                assert!(text.len() <= 512, "{tool}.{name}: {} bytes", text.len());
                table.push_str(&format!("{tool}.{name} = {wrong} ({kind}): {text}\n"));
                cases += 1;
            }
        }
        // Arguments that are not an object at all.
        for wrong in [json!("x"), json!(1), json!([1])] {
            let (is_error, text) = call(&mut e, &tool, &wrong);
            assert!(is_error, "{tool} {wrong}: {text}");
            assert!(
                text.starts_with(&format!("{tool}: arguments must be an object")),
                "{text}"
            );
            cases += 1;
        }
    }
    assert_eq!(
        state(&e),
        before,
        "a refused call changed the engine's state"
    );
    assert!(cases > 200, "{cases} cases");
    insta::assert_snapshot!(table);
}

/// Every string argument of every tool holding an 8 MiB string (and `files_to_read` holding one;
/// the real loop's test sends 100 MB through Pi, tests/extension/hostile.test.mjs): each call
/// answers within a few seconds, with a bounded reply: an error naming the
/// argument, or a result no larger than the 64 KiB cap (a search for it finds nothing; a handoff
/// cuts it to its narrative budget); nothing is persisted and no note changes.
#[test]
fn a_huge_string_in_any_argument_is_answered_quickly_and_boundedly() {
    let huge = "y".repeat(8 * 1024 * 1024);
    let mut e = engine();
    let before = state(&e);
    let mut outcomes = String::new();
    for (tool, schema) in schemas() {
        let props = schema["properties"].as_object().unwrap();
        for (name, prop) in props {
            let value = match prop["type"].as_str() {
                Some("string") => Value::String(huge.clone()),
                Some("array") => json!([huge.clone()]),
                _ => continue,
            };
            let mut args = base_args(&e, &schema);
            args.insert(name.clone(), value);
            let args = Value::Object(args);
            let started = Instant::now();
            let (is_error, text) = call(&mut e, &tool, &args);
            let took = started.elapsed();
            assert!(
                took < Duration::from_secs(5),
                "{tool}.{name}: {took:?} for an 8 MiB argument"
            );
            let limit = if tool == args::CONTEXT_HANDOFF && !is_error {
                crate::handoff::MAX_MARKDOWN_BYTES
            } else {
                args::MAX_RESULT_BYTES
            };
            assert!(
                text.len() <= limit,
                "{tool}.{name}: a reply of {} bytes",
                text.len()
            );
            if is_error {
                assert!(
                    text.starts_with(&format!("{tool}: argument \"{name}"))
                        || (text.starts_with(&format!("{tool}: ")) && text.contains(name.as_str())),
                    "{tool}.{name}: {}",
                    crate::text::ellipsize(&text, 300)
                );
                outcomes.push_str(&format!("{tool}.{name}: {text}\n"));
            } else {
                outcomes.push_str(&format!("{tool}.{name}: answered ({} bytes)\n", text.len()));
            }
        }
    }
    assert_eq!(
        state(&e),
        before,
        "a huge argument changed the engine's state"
    );
    insta::assert_snapshot!(outcomes);
}

// ---------------------------------------------------------------------------------------------
// Every configuration value of every wrong type

use crate::policy::budget_file::{quoted_key, KeyKind, BUDGET_KEYS};
use crate::settings::{SettingsLayers, COMPACTION_KEYS, RELAY_KEYS};

const MODEL: &str = "faux/faux-1";
const BUDGET_FILE: &str = "/work/cfg/context-budget.json";
const GLOBAL_FILE: &str = "/home/u/.pi/agent/settings.json";

/// A valid value of `kind` (thresholds all equal, so any subset stays in order).
fn sample(kind: &KeyKind, key: &str) -> Value {
    match kind {
        KeyKind::Bool => json!(false),
        KeyKind::PositiveNumber | KeyKind::PositiveInteger | KeyKind::NonNegativeInteger => {
            json!(1000)
        }
        KeyKind::Text if key == "agentName" => json!("agent-x"),
        KeyKind::Text => json!("true"),
        KeyKind::OneOf(options) => json!(options.last().unwrap()),
        KeyKind::PathList => json!(["/work"]),
        KeyKind::NameList => json!(["fetch_page"]),
        KeyKind::TextList => json!(["Never push to main."]),
        KeyKind::Object(keys) => Value::Object(
            keys.iter()
                .map(|(k, kind)| (k.to_string(), sample(kind, k)))
                .collect(),
        ),
        KeyKind::Map(inner) => json!({ MODEL: sample(inner, key) }),
    }
}

/// Every JSON type `kind` does not accept (and the in-type values it refuses: 0, -3, "").
fn wrongs(kind: &KeyKind, null_is_absent: bool) -> Vec<Value> {
    let candidates = [
        json!("x"),
        json!(""),
        json!(7),
        json!(2.5),
        json!(0),
        json!(-3),
        json!(true),
        json!(null),
        json!([]),
        json!([7]),
        json!(["relative/dir"]),
        json!({}),
    ];
    let accepts = |v: &Value| match kind {
        KeyKind::Bool => v.is_boolean(),
        KeyKind::PositiveNumber => v.as_f64().is_some_and(|f| f > 0.0),
        KeyKind::PositiveInteger => v.as_f64().is_some_and(|f| f >= 1.0 && f.fract() == 0.0),
        KeyKind::NonNegativeInteger => v.as_f64().is_some_and(|f| f >= 0.0 && f.fract() == 0.0),
        KeyKind::Text => v.as_str().is_some_and(|s| !s.trim().is_empty()),
        KeyKind::OneOf(options) => v.as_str().is_some_and(|s| options.contains(&s)),
        KeyKind::PathList => v.as_array().is_some_and(|a| {
            a.iter()
                .all(|p| p.as_str().is_some_and(|p| p.starts_with('/')))
        }),
        KeyKind::NameList | KeyKind::TextList => v.as_array().is_some_and(|a| {
            a.iter()
                .all(|n| n.as_str().is_some_and(|n| !n.trim().is_empty()))
        }),
        KeyKind::Object(_) | KeyKind::Map(_) => v.is_object(),
    };
    candidates
        .into_iter()
        .filter(|v| !(accepts(v) || (null_is_absent && v.is_null())))
        .collect()
}

/// Every key path under `keys`: (segments of the JSON document, the path as issues name it, kind).
fn key_paths(
    keys: &[(&'static str, KeyKind)],
    doc_prefix: &[String],
    shown_prefix: &str,
    out: &mut Vec<(Vec<String>, String, KeyKind)>,
) {
    for (key, kind) in keys {
        let mut doc = doc_prefix.to_vec();
        doc.push(key.to_string());
        let shown = if shown_prefix.is_empty() {
            key.to_string()
        } else {
            format!("{shown_prefix}.{key}")
        };
        out.push((doc.clone(), shown.clone(), *kind));
        match kind {
            KeyKind::Object(inner) => key_paths(inner, &doc, &shown, out),
            KeyKind::Map(inner) => {
                let mut mdoc = doc.clone();
                mdoc.push(MODEL.into());
                // How each map names its entries: `models."p/m"`, `modelOverrides["p/m"]`,
                // `resumeChecks.name`.
                let mshown = match *key {
                    "models" => format!("{shown}.{}", quoted_key(MODEL)),
                    "modelOverrides" => format!("{shown}[{}]", quoted_key(MODEL)),
                    _ => format!("{shown}.{MODEL}"),
                };
                out.push((mdoc.clone(), mshown.clone(), **inner));
                if let KeyKind::Object(entry) = inner {
                    key_paths(entry, &mdoc, &mshown, out);
                }
            }
            _ => {}
        }
    }
}

fn set(doc: &mut Value, path: &[String], v: Option<Value>) {
    let (last, parents) = path.split_last().unwrap();
    let mut at = doc;
    for p in parents {
        at = at.get_mut(p.as_str()).unwrap();
    }
    let obj = at.as_object_mut().unwrap();
    match v {
        Some(v) => obj.insert(last.clone(), v),
        None => obj.remove(last.as_str()),
    };
}

/// What one configuration gives: the issues as the user reads them (with file and key path), the
/// budget configuration (its `invalid` mark apart), Relay's settings and Pi's reserve.
fn configured(sources: &ConfigSources) -> (Vec<String>, String, bool) {
    let issues: Vec<String> = Engine::new()
        .configure(sources)
        .iter()
        .map(ToString::to_string)
        .collect();
    let layers = SettingsLayers::merge(
        sources.global.as_ref(),
        None,
        None,
        false,
        None,
        sources.global_file.as_deref(),
    );
    let (mut resolved, _) = layers.resolve();
    let (mut budget, _) = super::budget::select_budget(sources, resolved.relay.budget.as_ref());
    let invalid = budget.invalid.take().is_some();
    resolved.relay.budget = None;
    (issues, format!("{budget:?}\n{resolved:?}"), invalid)
}

/// Every key Relay reads (the settings' `relay` and `compaction` keys, `relay.budget`'s and the
/// budget file's), generated from the parsers' key tables, with a value of every wrong JSON type:
/// exactly one issue, naming the file and the key path; the configuration is then exactly what it
/// is without that key (every other key still applies), and a budget value marks the budget
/// configuration invalid (the documented fallback: enforce runs as observe until it is fixed).
#[test]
fn every_configuration_key_refuses_every_wrong_type_by_file_and_key_path() {
    let settings_base = json!({
        "relay": sample(&KeyKind::Object(RELAY_KEYS), "relay"),
        "compaction": sample(&KeyKind::Object(COMPACTION_KEYS), "compaction"),
    });
    let budget_base = sample(&KeyKind::Object(BUDGET_KEYS), "");
    let mut paths = Vec::new();
    key_paths(RELAY_KEYS, &["relay".into()], "relay", &mut paths);
    key_paths(
        COMPACTION_KEYS,
        &["compaction".into()],
        "compaction",
        &mut paths,
    );
    // relay.budget's own keys are checked below, with the budget file's.
    paths.retain(|(doc, _, _)| !(doc.len() > 2 && doc[0] == "relay" && doc[1] == "budget"));
    let settings_paths = paths.len();
    key_paths(BUDGET_KEYS, &[], "", &mut paths);
    let sources = |settings: &Value, budget: &Value| ConfigSources {
        global: Some(settings.clone()),
        global_file: Some(GLOBAL_FILE.into()),
        budget_config_env: Some(BUDGET_FILE.into()),
        budget_file: Some(budget.to_string()),
        cwd: Some("/work".into()),
        ..ConfigSources::default()
    };
    // The bases are valid: no issue at all.
    let (issues, _, invalid) = configured(&sources(&settings_base, &budget_base));
    assert!(issues.is_empty() && !invalid, "{issues:?}");
    // relay.budget applies only without a budget file: check its keys there too.
    let mut settings_budget = settings_base.clone();
    set(
        &mut settings_budget,
        &["relay".into(), "budget".into()],
        Some(budget_base.clone()),
    );
    let no_file = |settings: &Value| ConfigSources {
        budget_config_env: None,
        budget_file: None,
        ..sources(settings, &json!({}))
    };
    assert!(configured(&no_file(&settings_budget)).0.is_empty());

    let mut cases = 0;
    let mut table = String::new();
    for (i, (doc, shown, kind)) in paths.iter().enumerate() {
        let in_settings = i < settings_paths;
        let null_is_absent = doc.first().is_some_and(|d| d == "compaction");
        let families: Vec<(&str, Vec<String>, String)> = if in_settings {
            vec![(
                "settings",
                doc.clone(),
                format!("global settings ({GLOBAL_FILE}): {shown}"),
            )]
        } else {
            let mut in_relay = vec!["relay".to_string(), "budget".to_string()];
            in_relay.extend(doc.iter().cloned());
            vec![
                ("file", doc.clone(), format!("{BUDGET_FILE}: {shown}")),
                (
                    "relay.budget",
                    in_relay,
                    format!("global settings ({GLOBAL_FILE}): relay.budget.{shown}"),
                ),
            ]
        };
        for (family, doc, expected_path) in families {
            let run = |v: Option<Value>| {
                let (mut settings, mut budget) = (settings_budget.clone(), budget_base.clone());
                match family {
                    "file" => {
                        set(&mut budget, &doc, v);
                        configured(&sources(&settings_base, &budget))
                    }
                    "settings" => {
                        set(&mut settings, &doc, v);
                        configured(&sources(&settings, &budget))
                    }
                    _ => {
                        set(&mut settings, &doc, v);
                        configured(&no_file(&settings))
                    }
                }
            };
            let (absent_issues, absent, _) = run(None);
            assert!(
                absent_issues.is_empty(),
                "{expected_path} absent: {absent_issues:?}"
            );
            for wrong in wrongs(kind, null_is_absent) {
                let (issues, config, invalid) = run(Some(wrong.clone()));
                let what = format!("{family} {expected_path} = {wrong}");
                assert_eq!(issues.len(), 1, "{what}: {issues:?}");
                let text = issues[0].clone();
                // A bad element of a list is named by its index, and only it is dropped.
                let (prefix, without) = if wrong.is_array() && *kind == KeyKind::PathList {
                    (format!("{expected_path}[0]: "), run(Some(json!([]))).1)
                } else {
                    (format!("{expected_path}: "), absent.clone())
                };
                assert!(text.starts_with(&prefix), "{what}: {text}");
                assert_eq!(config, without, "{what}: the other keys did not all apply");
                if family != "settings" {
                    assert!(invalid, "{what}: not marked invalid");
                }
                if family != "relay.budget" {
                    table.push_str(&format!("{wrong}: {}\n", issues[0]));
                }
                cases += 1;
            }
        }
    }
    assert!(cases > 400, "{cases} cases");
    insta::assert_snapshot!(table);
}

/// The reset guard's texts (what the model reads when it asks for a reset in a window that holds
/// no work yet).
#[test]
fn reset_guard_texts() {
    insta::assert_snapshot!(
        "reset_guard_new_context",
        super::tools::RESET_GUARD_NEW_CONTEXT
    );
    insta::assert_snapshot!("reset_guard_handoff", super::tools::RESET_GUARD_HANDOFF);
}

/// A window opened by a reset refuses `new_context` until something happens in it; a user
/// message or a successful tool re-arms it, and a reload keeps the projection.
#[test]
fn the_reset_guard_is_a_projection_of_the_branch() {
    let mut e = engine();
    let m = moment(Some(10_000));
    assert!(
        !e.tool("new_context", &json!({}), &m).is_error,
        "the root window resets"
    );
    let mut b = Branch::new();
    let mut entries = vec![
        b.entry(json!({"type":"message","message":{"role":"user","content":"go"}})),
        b.entry(json!({"type":"compaction","summary":"boot","firstKeptEntryId":null,"tokensBefore":1,
            "details":{"relay":"window","windowId":"pcw:s:1","previousWindowId":"pcw:s:root","attempt":1,"source":"new_context","kind":"reset"}})),
    ];
    let mut fresh = Engine::new();
    fresh.resync(SID, &entries);
    let refused = fresh.tool("new_context", &json!({}), &m);
    assert!(refused.is_error && refused.text == super::tools::RESET_GUARD_NEW_CONTEXT);
    assert!(!refused.terminate);
    entries.push(b.entry(json!({"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"new_context",
        "content":[{"type":"text","text":"x"}],"isError":false}})));
    fresh.resync(SID, &entries);
    assert!(
        fresh.tool("new_context", &json!({}), &m).is_error,
        "a new_context result is no work"
    );
    entries.push(b.entry(json!({"type":"message","message":{"role":"toolResult","toolCallId":"d","toolName":"notes_write_file",
        "content":[{"type":"text","text":"x"}],"isError":false}})));
    fresh.resync(SID, &entries);
    assert!(
        !fresh.tool("new_context", &json!({}), &m).is_error,
        "work re-arms it"
    );
}
