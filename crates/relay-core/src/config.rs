//! Relay's settings: one `relay` object in Pi's `settings.json`, global and (when the project is
//! trusted) per project.
//!
//! ```json
//! { "relay": { "enabled": true, "reminderMarginTokens": 24576, "agentName": "pi", "budget": { … } } }
//! ```
//!
//! | key | type | default |
//! | --- | --- | --- |
//! | `enabled` | boolean: window features (boot block, reminder, reset-style windows) | `true` |
//! | `reminderMarginTokens` | whole number ≥ 1: the reminder fires at reserve + margin tokens left | `24576` |
//! | `agentName` | non-empty string, ≤ 64 characters, no control characters | `"pi"` |
//! | `budget` | object, passed through raw and validated by the budget module | absent |
//!
//! **Precedence:** the project value of a key wins over the global one (`budget` objects are
//! deep-merged, project keys winning, as Pi merges settings). **Validation:** every invalid
//! value, in either scope, is reported with its key path; the key then falls back to its
//! default (an invalid project value does *not* fall back to the global one: the user asked for
//! the project to decide). Unknown keys are reported and ignored. Nothing here panics.

use serde_json::{Map, Value};

use crate::ConfigIssue;

/// The settings key holding Relay's object.
pub const SETTINGS_KEY: &str = "relay";
/// Pi's default `compaction.reserveTokens`.
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;
/// Default extra margin above the reserve at which the reminder fires.
pub const DEFAULT_REMINDER_MARGIN_TOKENS: u64 = 24_576;
/// Default agent name shown in the boot block.
pub const DEFAULT_AGENT_NAME: &str = "pi";
/// Longest accepted `agentName`, in Unicode characters.
pub const MAX_AGENT_NAME_CHARS: usize = 64;
/// Largest accepted token count (JavaScript's `Number.MAX_SAFE_INTEGER`).
pub const MAX_TOKENS: u64 = (1 << 53) - 1;

const KNOWN_KEYS: [&str; 4] = ["enabled", "reminderMarginTokens", "agentName", "budget"];

/// Relay's resolved settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RelayConfig {
    /// Window features on (boot block, reminder, reset-style windows).
    pub enabled: bool,
    /// The reminder fires when physical remaining capacity drops to reserve + this margin.
    pub reminder_margin_tokens: u64,
    /// Agent name shown in the boot block.
    pub agent_name: String,
    /// The raw `budget` sub-object (deep-merged global + project), validated elsewhere.
    pub budget: Option<Value>,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            enabled: true,
            reminder_margin_tokens: DEFAULT_REMINDER_MARGIN_TOKENS,
            agent_name: DEFAULT_AGENT_NAME.to_string(),
            budget: None,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Global,
    Project,
}

impl Scope {
    fn name(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Project => "project",
        }
    }
}

/// Resolve Relay's settings from the `relay` objects of Pi's global and project settings
/// (`None` when a scope has no `relay` key). Returns the settings and every problem found.
pub fn resolve_config(
    global: Option<&Value>,
    project: Option<&Value>,
) -> (RelayConfig, Vec<ConfigIssue>) {
    let mut issues = Vec::new();
    let g = scope_object(global, Scope::Global, &mut issues);
    let p = scope_object(project, Scope::Project, &mut issues);
    for (obj, scope) in [(g, Scope::Global), (p, Scope::Project)] {
        if let Some(obj) = obj {
            for key in obj.keys().filter(|k| !KNOWN_KEYS.contains(&k.as_str())) {
                issues.push(ConfigIssue {
                    path: format!("{SETTINGS_KEY}.{key}"),
                    message: format!(
                        "unknown key in the {} settings; ignored (known keys: {})",
                        scope.name(),
                        KNOWN_KEYS.join(", ")
                    ),
                });
            }
        }
    }

    let mut cfg = RelayConfig::default();
    if let Some(v) = resolve_key(g, p, "enabled", "true or false", "true", &mut issues, |v| {
        v.as_bool()
    }) {
        cfg.enabled = v;
    }
    if let Some(v) = resolve_key(
        g,
        p,
        "reminderMarginTokens",
        "a whole number of tokens, at least 1",
        &DEFAULT_REMINDER_MARGIN_TOKENS.to_string(),
        &mut issues,
        token_count,
    ) {
        cfg.reminder_margin_tokens = v;
    }
    if let Some(v) = resolve_key(
        g,
        p,
        "agentName",
        "a non-empty name of at most 64 characters without control characters",
        "\"pi\"",
        &mut issues,
        agent_name,
    ) {
        cfg.agent_name = v;
    }
    cfg.budget = resolve_key(
        g,
        p,
        "budget",
        "an object",
        "no budget settings",
        &mut issues,
        |v| v.is_object().then(|| v.clone()),
    );
    // Deep-merge when both scopes hold a valid budget object.
    if let (Some(Value::Object(gb)), Some(Value::Object(_))) =
        (g.and_then(|g| g.get("budget")), cfg.budget.as_ref())
    {
        if p.and_then(|p| p.get("budget")).is_some() {
            let mut merged = Value::Object(gb.clone());
            deep_merge(&mut merged, cfg.budget.as_ref().expect("checked above"));
            cfg.budget = Some(merged);
        }
    }
    (cfg, issues)
}

fn scope_object<'a>(
    v: Option<&'a Value>,
    scope: Scope,
    issues: &mut Vec<ConfigIssue>,
) -> Option<&'a Map<String, Value>> {
    match v? {
        Value::Object(m) => Some(m),
        other => {
            issues.push(ConfigIssue {
                path: SETTINGS_KEY.to_string(),
                message: format!(
                    "must be an object in the {} settings, got {}; those settings are ignored",
                    scope.name(),
                    show(other)
                ),
            });
            None
        }
    }
}

/// Pick the effective value of `key`: the project value if present, else the global one.
/// An invalid effective value falls back to the default (`None`); every invalid value is reported.
fn resolve_key<T>(
    g: Option<&Map<String, Value>>,
    p: Option<&Map<String, Value>>,
    key: &str,
    expected: &str,
    default: &str,
    issues: &mut Vec<ConfigIssue>,
    parse: impl Fn(&Value) -> Option<T>,
) -> Option<T> {
    let gv = g.and_then(|m| m.get(key));
    let pv = p.and_then(|m| m.get(key));
    let path = format!("{SETTINGS_KEY}.{key}");
    let mut result = None;
    if let Some(v) = gv {
        match parse(v) {
            Some(t) if pv.is_none() => result = Some(t),
            Some(_) => {}
            None => issues.push(ConfigIssue {
                path: path.clone(),
                message: format!(
                    "expected {expected}, got {} in the global settings; {}",
                    show(v),
                    if pv.is_some() {
                        "ignored because the project settings set this key".to_string()
                    } else {
                        format!("using the default ({default})")
                    }
                ),
            }),
        }
    }
    if let Some(v) = pv {
        match parse(v) {
            Some(t) => result = Some(t),
            None => issues.push(ConfigIssue {
                path,
                message: format!(
                    "expected {expected}, got {} in the project settings; using the default ({default})",
                    show(v)
                ),
            }),
        }
    }
    result
}

fn token_count(v: &Value) -> Option<u64> {
    let n = v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 1.0 && *f <= MAX_TOKENS as f64)
            .map(|f| f as u64)
    })?;
    (1..=MAX_TOKENS).contains(&n).then_some(n)
}

fn agent_name(v: &Value) -> Option<String> {
    let s = v.as_str()?.trim();
    let ok = !s.is_empty()
        && s.chars().count() <= MAX_AGENT_NAME_CHARS
        && !s.chars().any(char::is_control);
    ok.then(|| s.to_string())
}

fn deep_merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(slot) => deep_merge(slot, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

/// A short rendering of a JSON value for messages.
fn show(v: &Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Physical remaining capacity (tokens) at or below which the reminder fires: reserve + margin.
pub fn reminder_threshold(reserve_tokens: u64, margin: u64) -> u64 {
    reserve_tokens.saturating_add(margin)
}

/// Tokens available before Pi's compaction reserve: max(0, window − used − reserve), or `None`
/// when Pi cannot estimate usage (e.g. right after a reset).
pub fn remaining_tokens(
    context_window: u64,
    used_tokens: Option<u64>,
    reserve_tokens: u64,
) -> Option<u64> {
    used_tokens.map(|used| {
        context_window
            .saturating_sub(used)
            .saturating_sub(reserve_tokens)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resolve(g: Option<Value>, p: Option<Value>) -> (RelayConfig, Vec<ConfigIssue>) {
        resolve_config(g.as_ref(), p.as_ref())
    }

    #[test]
    fn absent_settings_give_defaults_without_issues() {
        for (g, p) in [
            (None, None),
            (Some(json!({})), None),
            (None, Some(json!({}))),
        ] {
            let (cfg, issues) = resolve(g, p);
            assert_eq!(cfg, RelayConfig::default());
            assert!(issues.is_empty());
        }
        let d = RelayConfig::default();
        assert!(d.enabled);
        assert_eq!(d.reminder_margin_tokens, 24_576);
        assert_eq!(d.agent_name, "pi");
        assert_eq!(d.budget, None);
    }

    #[test]
    fn every_key_accepts_valid_values() {
        let (cfg, issues) = resolve(
            Some(
                json!({"enabled":false,"reminderMarginTokens":1000,"agentName":"  codex  ","budget":{"mode":"observe"}}),
            ),
            None,
        );
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(
            cfg,
            RelayConfig {
                enabled: false,
                reminder_margin_tokens: 1000,
                agent_name: "codex".into(),
                budget: Some(json!({"mode":"observe"})),
            }
        );
        let (cfg, issues) = resolve(Some(json!({"reminderMarginTokens":32768.0})), None);
        assert!(issues.is_empty());
        assert_eq!(cfg.reminder_margin_tokens, 32_768);
        let (cfg, _) = resolve(Some(json!({"reminderMarginTokens":MAX_TOKENS})), None);
        assert_eq!(cfg.reminder_margin_tokens, MAX_TOKENS);
        let (cfg, _) = resolve(Some(json!({"agentName":"é".repeat(64)})), None);
        assert_eq!(cfg.agent_name.chars().count(), 64);
    }

    #[test]
    fn every_invalid_value_is_reported_and_falls_back_per_key() {
        let cases: Vec<(&str, Value)> = vec![
            ("enabled", json!("yes")),
            ("enabled", json!(1)),
            ("enabled", json!(null)),
            ("reminderMarginTokens", json!(0)),
            ("reminderMarginTokens", json!(-5)),
            ("reminderMarginTokens", json!(1.5)),
            ("reminderMarginTokens", json!("24576")),
            ("reminderMarginTokens", json!(MAX_TOKENS + 1)),
            ("reminderMarginTokens", json!(1e300)),
            ("agentName", json!("")),
            ("agentName", json!("   ")),
            ("agentName", json!("a\nb")),
            ("agentName", json!("x".repeat(65))),
            ("agentName", json!(7)),
            ("budget", json!("enforce")),
            ("budget", json!([1])),
        ];
        for (key, bad) in cases {
            // The bad key sits next to a valid other key, which must survive.
            let other = if key == "enabled" {
                json!({"agentName":"zed"})
            } else {
                json!({"enabled":false})
            };
            let mut obj = other.clone();
            obj[key] = bad.clone();
            let (cfg, issues) = resolve(Some(obj), None);
            assert_eq!(issues.len(), 1, "{key}={bad}: {issues:?}");
            assert_eq!(issues[0].path, format!("relay.{key}"));
            assert!(
                issues[0].message.contains("expected"),
                "{}",
                issues[0].message
            );
            assert!(
                issues[0].message.contains("using the default"),
                "{}",
                issues[0].message
            );
            let d = RelayConfig::default();
            match key {
                "enabled" => {
                    assert_eq!(cfg.enabled, d.enabled);
                    assert_eq!(cfg.agent_name, "zed");
                }
                _ => {
                    assert!(!cfg.enabled);
                    assert_eq!(cfg.reminder_margin_tokens, d.reminder_margin_tokens);
                    assert_eq!(cfg.agent_name, d.agent_name);
                    assert_eq!(cfg.budget, d.budget);
                }
            }
        }
        let (_, issues) = resolve(Some(json!({"reminderMarginTokens":0})), None);
        assert_eq!(
            issues[0].message,
            "expected a whole number of tokens, at least 1, got 0 in the global settings; using the default (24576)"
        );
    }

    #[test]
    fn all_problems_are_reported_at_once() {
        let (cfg, issues) = resolve(
            Some(
                json!({"enabled":"no","reminderMarginTokens":-1,"agentName":"","budget":3,"colour":"red"}),
            ),
            Some(json!({"margin":5})),
        );
        assert_eq!(cfg, RelayConfig::default());
        let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "relay.colour",
                "relay.margin",
                "relay.enabled",
                "relay.reminderMarginTokens",
                "relay.agentName",
                "relay.budget"
            ]
        );
        assert!(issues[0]
            .message
            .contains("unknown key in the global settings"));
        assert!(issues[1]
            .message
            .contains("unknown key in the project settings"));
    }

    #[test]
    fn project_wins_per_key() {
        let (cfg, issues) = resolve(
            Some(json!({"enabled":false,"reminderMarginTokens":1000,"agentName":"global"})),
            Some(json!({"reminderMarginTokens":2000})),
        );
        assert!(issues.is_empty());
        assert!(!cfg.enabled);
        assert_eq!(cfg.reminder_margin_tokens, 2000);
        assert_eq!(cfg.agent_name, "global");

        // An invalid project value falls back to the default, not to the global value.
        let (cfg, issues) = resolve(
            Some(json!({"reminderMarginTokens":1000})),
            Some(json!({"reminderMarginTokens":"lots"})),
        );
        assert_eq!(cfg.reminder_margin_tokens, DEFAULT_REMINDER_MARGIN_TOKENS);
        assert_eq!(issues.len(), 1);
        assert!(issues[0]
            .message
            .contains("in the project settings; using the default (24576)"));

        // An invalid global value overridden by a valid project value is still reported.
        let (cfg, issues) = resolve(
            Some(json!({"enabled":"off"})),
            Some(json!({"enabled":false})),
        );
        assert!(!cfg.enabled);
        assert_eq!(issues.len(), 1);
        assert!(issues[0]
            .message
            .contains("ignored because the project settings set this key"));
    }

    #[test]
    fn budget_objects_deep_merge_with_project_winning() {
        let (cfg, issues) = resolve(
            Some(json!({"budget":{"mode":"observe","models":{"a/x":{"soft":0.5,"hard":0.9}}}})),
            Some(json!({"budget":{"mode":"enforce","models":{"a/x":{"soft":0.6}}}})),
        );
        assert!(issues.is_empty());
        assert_eq!(
            cfg.budget,
            Some(json!({"mode":"enforce","models":{"a/x":{"soft":0.6,"hard":0.9}}}))
        );
        let (cfg, _) = resolve(None, Some(json!({"budget":{"mode":"off"}})));
        assert_eq!(cfg.budget, Some(json!({"mode":"off"})));
        let (cfg, issues) = resolve(
            Some(json!({"budget":{"mode":"off"}})),
            Some(json!({"budget":false})),
        );
        assert_eq!(cfg.budget, None);
        assert_eq!(issues.len(), 1);
    }

    #[test]
    fn non_object_relay_value_is_one_issue() {
        for bad in [
            json!(true),
            json!("on"),
            json!([1, 2]),
            json!(null),
            json!(5),
        ] {
            let (cfg, issues) = resolve(Some(bad.clone()), Some(json!({"agentName":"proj"})));
            assert_eq!(issues.len(), 1, "{bad}");
            assert_eq!(issues[0].path, "relay");
            assert!(issues[0]
                .message
                .contains("must be an object in the global settings"));
            assert_eq!(cfg.agent_name, "proj");
            let (cfg, issues) = resolve(None, Some(bad));
            assert_eq!(issues.len(), 1);
            assert!(issues[0].message.contains("project settings"));
            assert_eq!(cfg, RelayConfig::default());
        }
    }

    #[test]
    fn thresholds_and_remaining() {
        assert_eq!(
            reminder_threshold(DEFAULT_RESERVE_TOKENS, DEFAULT_REMINDER_MARGIN_TOKENS),
            40_960
        );
        assert_eq!(reminder_threshold(u64::MAX, 5), u64::MAX);
        for (window, used, reserve, want) in [
            (200_000, Some(100_000), 16_384, Some(83_616)),
            (200_000, Some(183_616), 16_384, Some(0)),
            (200_000, Some(190_000), 16_384, Some(0)),
            (200_000, Some(250_000), 16_384, Some(0)),
            (200_000, Some(0), 0, Some(200_000)),
            (200_000, None, 16_384, None),
        ] {
            assert_eq!(
                remaining_tokens(window, used, reserve),
                want,
                "{window} {used:?} {reserve}"
            );
        }
    }

    #[test]
    fn issues_render_with_path() {
        let (_, issues) = resolve(Some(json!({"enabled":"x".repeat(100)})), None);
        let shown = issues[0].to_string();
        assert!(shown.starts_with("relay.enabled: expected true or false, got \""));
        assert!(shown.contains("…"), "long values are shortened: {shown}");
    }
}
