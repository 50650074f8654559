//! The effective configuration: every setting in force for one model and role, each with the
//! place its value came from, and the warnings. `/relay config` (the engine, with what Pi reports)
//! and `relay config` (the CLI, with the files on disk) print the same text.
//!
//! **Contract.**
//! - The same resolution as the engine's ([`SettingsLayers`], `select_budget`,
//!   [`resolve_thresholds`], [`effective_mode`], [`reminder_threshold`]): this module only adds
//!   where each value came from.
//! - Table-driven: the list of keys is [`RELAY_KEYS`] (with `budget` walked through
//!   [`BUDGET_KEYS`]); a key added to a table is listed with no change here (its default is
//!   shown as `built-in default` until [`default_text`] names it).
//! - Origins: `default`, `derived from the window`, `global settings (<file>)`, `project settings
//!   (.pi/settings.json)`, `budget file (<path>)`, `environment (<VAR>)`, `/relay on|off`, the
//!   host (Pi, or the CLI's options).

use serde::Serialize;
use serde_json::Value;

use crate::engine::wire::ConfigSources;
use crate::engine::wrapper::ownership;
use crate::policy::budget_file::{quoted_key, KeyKind, BUDGET_KEYS};
use crate::policy::{
    effective_mode, resolve_thresholds, BudgetConfig, EffectiveMode, Mode, DEFAULT_IDLE_MINUTES,
    DEFAULT_IDLE_MIN_TOKENS, DEFAULT_KEEP_RECENT_TOKENS,
};
use crate::render::group_digits;
use crate::settings::{
    reminder_threshold, ResolvedSettings, Role, SettingsLayers, COMPACTION_KEYS,
    DEFAULT_AGENT_NAME, DEFAULT_REMINDER_MARGIN_TOKENS, DEFAULT_RESERVE_TOKENS,
    PROJECT_SETTINGS_FILE, RELAY_KEYS,
};

/// What the report is computed for, besides the settings sources.
#[derive(Debug, Clone, Default)]
pub struct ConfigQuery<'a> {
    /// `provider/model-id`, when known.
    pub model: Option<&'a str>,
    /// The model's context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Who reported the model (`Pi (the current model)`, `--model`, …).
    pub model_origin: &'a str,
    /// Who reported the window (`Pi (the current model)`, `--window`, …).
    pub window_origin: &'a str,
    /// The hosting rule's answer (a nested Relay runtime is a subagent), when `relay.role` is unset.
    pub hosted_subagent: bool,
    /// Where the hosting rule's answer came from (`the hosting rule`, `--role`).
    pub role_origin: &'a str,
    /// `/relay on|off` in this runtime.
    pub toggle: Option<bool>,
    /// The mode as the engine applies it (context guard, `/relay off`); `None`: computed from the
    /// configuration and the cwd alone.
    pub mode: Option<EffectiveMode>,
    /// The pins the session added with `/relay pin` (the CLI reads no session: none).
    pub session_pins: &'a [String],
}

/// One setting: its key (or a name for a derived value), the value in force and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    pub key: String,
    pub value: String,
    pub origin: String,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectiveConfig {
    /// `model a/b, window 200,000 tokens, role main`.
    pub subject: String,
    /// The values Relay acts on for this model and role (derived ones included).
    pub in_force: Vec<Setting>,
    /// Every key Relay reads, as set or defaulted.
    pub keys: Vec<Setting>,
    /// The pinned instructions in force, numbered as `/relay pins` numbers them (key `1`, `2`, …),
    /// each with where it was pinned.
    pub pins: Vec<Setting>,
    /// Every problem found in the sources, naming the file and key path.
    pub warnings: Vec<String>,
}

/// Where a key path's value came from.
fn origin(layers: &SettingsLayers, path: &str) -> Option<String> {
    layers.source_of(path)
}

/// The configured budget object, where it came from, and its problems (`select_budget`'s rule).
struct BudgetSource {
    config: BudgetConfig,
    /// The raw object the keys are read from (`relay.budget`, or the file's root).
    raw: Option<Value>,
    /// `Some(file label)` when the budget file governs; `None`: `relay.budget`.
    file: Option<String>,
}

fn budget_source(
    sources: &ConfigSources,
    relay_budget: Option<&Value>,
    layers: &SettingsLayers,
    warnings: &mut Vec<String>,
) -> BudgetSource {
    let (config, issues) = crate::engine::select_budget(sources, relay_budget);
    warnings.extend(issues.into_iter().map(|i| layers.attribute(i).to_string()));
    let file = sources.budget_file_path();
    let governs = file.as_ref().is_some_and(|f| f.explicit)
        || sources.budget_file.is_some()
        || sources.budget_file_error.is_some();
    if governs {
        let path = file.map(|f| f.path).unwrap_or_default();
        let raw = sources
            .budget_file
            .as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .filter(Value::is_object);
        BudgetSource {
            config,
            raw,
            file: Some(format!("budget file ({path})")),
        }
    } else {
        BudgetSource {
            config,
            raw: relay_budget.cloned(),
            file: None,
        }
    }
}

/// Compute the report.
pub fn effective_config(sources: &ConfigSources, query: &ConfigQuery) -> EffectiveConfig {
    let layers = sources.settings_layers();
    let (resolved, issues) = layers.resolve();
    let mut warnings: Vec<String> = issues.iter().map(ToString::to_string).collect();
    let budget = budget_source(
        sources,
        resolved.relay.budget.as_ref(),
        &layers,
        &mut warnings,
    );
    let subagent = match resolved.relay.role {
        Some(role) => role == Role::Subagent,
        None => query.hosted_subagent,
    };
    let mut r = Report {
        sources,
        query,
        layers: &layers,
        resolved: &resolved,
        budget: &budget,
        warnings,
        model: query.model.filter(|m| !m.is_empty()),
        window: query.context_window.filter(|w| *w > 0),
        subagent,
        in_force: Vec::new(),
    };
    let enabled = r.put_identity();
    let reserve = r.put_reserve_and_reminder();
    r.put_thresholds(reserve);
    r.put_mode_and_idle(enabled);
    r.put_files_and_environment();

    // Every key, table-driven.
    let mut keys = Vec::new();
    walk_relay_keys(&layers, &budget, &r.warnings, &mut keys);

    EffectiveConfig {
        subject: format!(
            "model {}, window {}, role {}",
            r.model.unwrap_or("unknown"),
            match r.window {
                Some(w) => format!("{} tokens", group_digits(w)),
                None => "unknown".into(),
            },
            r.role()
        ),
        in_force: r.in_force,
        keys,
        pins: pins_in_force(&resolved, &layers, query.session_pins),
        warnings: r.warnings,
    }
}

/// The report as it is built: what every part reads, and the values in force so far.
struct Report<'a> {
    sources: &'a ConfigSources,
    query: &'a ConfigQuery<'a>,
    layers: &'a SettingsLayers,
    resolved: &'a ResolvedSettings,
    budget: &'a BudgetSource,
    warnings: Vec<String>,
    model: Option<&'a str>,
    window: Option<u64>,
    subagent: bool,
    in_force: Vec<Setting>,
}

impl Report<'_> {
    fn put(&mut self, key: &str, value: String, origin: String) {
        self.in_force.push(Setting {
            key: key.into(),
            value,
            origin,
        });
    }

    fn role(&self) -> &'static str {
        if self.subagent {
            "subagent"
        } else {
            "main"
        }
    }

    /// The settings file a key path came from, else `default`.
    fn settings_origin(&self, path: &str, default: &str) -> String {
        origin(self.layers, path).unwrap_or_else(|| default.to_string())
    }

    /// `relay.budget.` when the budget comes from the settings, nothing for a budget file.
    fn budget_prefix(&self) -> &'static str {
        if self.budget.file.is_some() {
            ""
        } else {
            "relay.budget."
        }
    }

    /// Where a budget key's value came from: the budget file that holds it, or the settings file.
    fn budget_origin(&self, key: &str) -> Option<String> {
        match &self.budget.file {
            Some(file) => self
                .budget
                .raw
                .as_ref()
                .is_some_and(|raw| holds_path(raw, key))
                .then(|| file.clone()),
            None => origin(self.layers, &format!("relay.budget.{key}")),
        }
    }

    /// A budget key's origin as the report shows it (`relay.budget.<key> in <file>`, `default`).
    fn budget_key_origin(&self, key: &str) -> String {
        self.budget_origin(key)
            .map(|o| format!("{}{key} in {o}", self.budget_prefix()))
            .unwrap_or_else(|| "default".into())
    }

    /// Model, window, role, on or off; returns whether Relay is on.
    fn put_identity(&mut self) -> bool {
        let (query, relay) = (self.query, &self.resolved.relay);
        self.put(
            "model",
            self.model.unwrap_or("unknown").to_string(),
            query.model_origin.to_string(),
        );
        self.put(
            "window",
            match self.window {
                Some(w) => format!("{} tokens", group_digits(w)),
                None => "unknown".into(),
            },
            query.window_origin.to_string(),
        );
        let role_origin = match relay.role {
            Some(_) => self.settings_origin("relay.role", "default"),
            None => query.role_origin.to_string(),
        };
        self.put("role", self.role().into(), role_origin);
        let enabled = query.toggle.unwrap_or(relay.enabled);
        let enabled_origin = match query.toggle {
            Some(true) => "/relay on".into(),
            Some(false) => "/relay off".into(),
            None => self.settings_origin("relay.enabled", "default"),
        };
        self.put("enabled", enabled.to_string(), enabled_origin);
        enabled
    }

    /// Pi's reserve for this model and the reminder derived from it; returns the reserve.
    fn put_reserve_and_reminder(&mut self) -> u64 {
        let resolved = self.resolved;
        let reserve = resolved.reserve_tokens.for_model(self.model);
        let overridden = self
            .model
            .filter(|m| resolved.reserve_tokens.models.contains_key(*m));
        let reserve_origin = match overridden {
            Some(m) => {
                let path = format!("compaction.modelOverrides[{}].reserveTokens", quoted_key(m));
                format!("{path} in {}", self.settings_origin(&path, "default"))
            }
            None => match origin(self.layers, "compaction.reserveTokens") {
                Some(o)
                    if !self
                        .warnings
                        .iter()
                        .any(|w| w.contains("compaction.reserveTokens:")) =>
                {
                    format!("compaction.reserveTokens in {o}")
                }
                _ => "default (Pi's)".into(),
            },
        };
        self.put(
            "reserve",
            format!("{} tokens", group_digits(reserve)),
            reserve_origin,
        );
        let margin = resolved.relay.reminder_margin_tokens;
        let threshold = reminder_threshold(self.window.unwrap_or(0), reserve, margin);
        self.put(
            "reminder",
            format!("at {} tokens left", group_digits(threshold)),
            match self.window {
                Some(_) => format!(
                    "derived from the window: reserve + reminderMarginTokens ({}), capped to the window",
                    group_digits(margin)
                ),
                None => format!(
                    "reserve + reminderMarginTokens ({}); capped once the window is known",
                    group_digits(margin)
                ),
            },
        );
        reserve
    }

    /// The four thresholds, each from the model's or the role's value, or derived.
    fn put_thresholds(&mut self, reserve: u64) {
        let cfg = &self.budget.config;
        let model_key = self.model.unwrap_or("");
        let subagent = self.subagent;
        let t = resolve_thresholds(cfg, model_key, self.window.unwrap_or(0), reserve, subagent);
        let role_set = if subagent { &cfg.subagent } else { &cfg.main };
        let model_set = cfg
            .models
            .get(model_key)
            .map(|m| if subagent { m.subagent } else { m.main })
            .unwrap_or_default();
        let explicit = [model_set.soft, model_set.handoff, model_set.hard]
            .iter()
            .chain([role_set.soft, role_set.handoff, role_set.hard].iter())
            .any(Option::is_some);
        for (name, value, m, r) in [
            ("soft", t.soft, model_set.soft, role_set.soft),
            ("handoff", t.handoff, model_set.handoff, role_set.handoff),
            ("hard", t.hard, model_set.hard, role_set.hard),
            (
                "minProgress",
                t.min_progress,
                model_set.min_progress,
                role_set.min_progress,
            ),
        ] {
            let origin = self.band_origin(name, value, (m, r), explicit);
            self.put(name, format!("{} tokens", group_digits(value)), origin);
        }
    }

    /// Where a threshold came from: the model's value, the role's, or how it was derived.
    fn band_origin(
        &self,
        name: &str,
        value: u64,
        (from_model, from_role): (Option<u64>, Option<u64>),
        explicit: bool,
    ) -> String {
        let (prefix, role) = (self.budget_prefix(), self.role());
        let model_path = format!(
            "models.{}.{role}.{name}",
            quoted_key(self.model.unwrap_or(""))
        );
        let role_path = format!("{role}.{name}");
        if from_model == Some(value) {
            format!(
                "{prefix}{model_path} in {}",
                self.budget_origin(&model_path).unwrap_or_default()
            )
        } else if from_role == Some(value) {
            format!(
                "{prefix}{role_path} in {}",
                self.budget_origin(&role_path).unwrap_or_default()
            )
        } else if name == "minProgress" && explicit {
            "hard ÷ 12".into()
        } else if !explicit {
            match self.window {
                Some(_) => "derived from the window".into(),
                None => "default (the window is unknown)".into(),
            }
        } else {
            "derived from the given values (soft 60 %, handoff 75 % of hard)".into()
        }
    }

    /// The mode and where it applies, and the idle request's keys.
    fn put_mode_and_idle(&mut self, enabled: bool) {
        let cfg = &self.budget.config;
        let cwd = self.sources.cwd.as_deref().unwrap_or("");
        let mut mode = self
            .query
            .mode
            .clone()
            .unwrap_or_else(|| effective_mode(cfg, cwd));
        if self.query.mode.is_none() && mode.effective == Mode::Enforce && !enabled {
            mode = EffectiveMode {
                configured: mode.configured,
                effective: Mode::Observe,
                reason: Some("Relay is off".into()),
            };
        }
        let mode_value = match &mode.reason {
            Some(reason) if mode.effective != mode.configured => format!(
                "{} (configured {}: {reason})",
                mode.effective.as_str(),
                mode.configured.as_str()
            ),
            Some(reason) => format!("{} ({reason})", mode.effective.as_str()),
            None => mode.effective.as_str().to_string(),
        };
        self.put("mode", mode_value, self.budget_key_origin("mode"));
        self.put(
            "enforceCwds",
            match &cfg.enforce_cwds {
                None => "everywhere".into(),
                Some(list) if list.is_empty() => "nowhere".into(),
                Some(list) => format!("{} (cwd {cwd})", list.join(", ")),
            },
            self.budget_key_origin("enforceCwds"),
        );
        self.put(
            "idleMinutes",
            format!("{}", cfg.idle_minutes.unwrap_or(DEFAULT_IDLE_MINUTES)),
            self.budget_key_origin("idleMinutes"),
        );
        self.put(
            "idleMinTokens",
            format!(
                "{} tokens",
                group_digits(cfg.idle_min_tokens.unwrap_or(DEFAULT_IDLE_MIN_TOKENS))
            ),
            self.budget_key_origin("idleMinTokens"),
        );
        self.put(
            "keepRecentTokens",
            format!(
                "{} tokens",
                group_digits(cfg.keep_recent_tokens.unwrap_or(DEFAULT_KEEP_RECENT_TOKENS))
            ),
            self.budget_key_origin("keepRecentTokens"),
        );
    }

    /// The budget file, the state folder, the resume check and the pi-session wrapper.
    fn put_files_and_environment(&mut self) {
        let (sources, budget) = (self.sources, self.budget);
        let file = sources.budget_file_path();
        self.put(
            "budget file",
            match (&file, &budget.file) {
                (None, _) => "none (no agent directory)".into(),
                (Some(f), Some(_)) if sources.budget_file.is_some() => {
                    format!("{} (in use)", f.path)
                }
                (Some(f), Some(_)) => format!("{} (unusable: see the warnings)", f.path),
                (Some(f), None) => format!("{} (absent: relay.budget applies)", f.path),
            },
            match &file {
                Some(f) if f.explicit => "environment (PI_CONTEXT_BUDGET_CONFIG)".into(),
                Some(_) => "default (<agent dir>/context-budget.json)".into(),
                None => "default".into(),
            },
        );
        self.put(
            "state folder",
            sources
                .resolved_state_dir()
                .unwrap_or_else(|| "none".into()),
            if sources.state_dir.as_deref().is_some_and(|d| !d.is_empty()) {
                "environment (PI_CONTEXT_BUDGET_STATE_DIR)".into()
            } else {
                "default (<agent dir>/context-budget)".into()
            },
        );
        let resume_env = sources
            .resume_check_env
            .as_deref()
            .filter(|c| !c.trim().is_empty());
        let checks = &budget.config.resume_checks;
        self.put(
            "resume check",
            match resume_env {
                Some(cmd) => cmd.to_string(),
                None if checks.is_empty() => "none".into(),
                None => format!(
                    "by session name: {}",
                    checks.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            },
            match resume_env {
                Some(_) => "environment (PI_RESUME_CHECK)".into(),
                None => self.budget_key_origin("resumeChecks"),
            },
        );
        let wrapper = match &sources.wrapper {
            None => (
                "not known here".to_string(),
                "Pi decides when Relay loads; `relay doctor` checks pi-session".to_string(),
            ),
            Some(facts) => {
                let o = ownership(Some(facts), self.subagent);
                (
                    if o.owned {
                        "owned: a fallback relaunches Pi in a fresh process".into()
                    } else {
                        format!("not owned: {}", o.reason)
                    },
                    "environment (PI_RELAUNCH_MARKER, PI_SESSION_WRAPPER_PID, PI_SESSION_LAUNCH_ID)"
                        .into(),
                )
            }
        };
        self.put("wrapper", wrapper.0, wrapper.1);
    }
}

/// How the keys of a budget file in use are listed (`budget file: main.soft`).
const FILE_KEYS: &str = "budget file: ";

/// List every leaf key of [`RELAY_KEYS`] (the budget's under its source) and of
/// [`COMPACTION_KEYS`]: its value as set, or its default.
fn walk_relay_keys(
    layers: &SettingsLayers,
    budget: &BudgetSource,
    warnings: &[String],
    out: &mut Vec<Setting>,
) {
    for (key, kind) in RELAY_KEYS {
        if *key == "budget" {
            match &budget.file {
                Some(file) => walk(
                    BUDGET_KEYS,
                    FILE_KEYS,
                    "budget.",
                    budget.raw.as_ref(),
                    &|_| Some(file.clone()),
                    warnings,
                    out,
                ),
                None => walk(
                    BUDGET_KEYS,
                    "relay.budget.",
                    "budget.",
                    layers.relay().and_then(|r| r.get("budget")),
                    &|p| layers.source_of(p),
                    warnings,
                    out,
                ),
            }
            continue;
        }
        walk(
            std::slice::from_ref(&(*key, *kind)),
            "relay.",
            "",
            layers.relay(),
            &|p| layers.source_of(p),
            warnings,
            out,
        );
    }
    walk(
        COMPACTION_KEYS,
        "compaction.",
        "compaction.",
        layers.compaction(),
        &|p| layers.source_of(p),
        warnings,
        out,
    );
}

/// One table's leaves. `prefix` is the key path of `value` in its source (for origins and
/// warnings); `default_prefix` names it for [`default_text`].
fn walk(
    table: &[(&str, KeyKind)],
    prefix: &str,
    default_prefix: &str,
    value: Option<&Value>,
    source: &dyn Fn(&str) -> Option<String>,
    warnings: &[String],
    out: &mut Vec<Setting>,
) {
    for (key, kind) in table {
        let path = format!("{prefix}{key}");
        let held = value.and_then(|v| v.get(*key));
        if let KeyKind::Object(inner) = kind {
            if held.is_none_or(Value::is_object) {
                walk(
                    inner,
                    &format!("{path}."),
                    &format!("{default_prefix}{key}."),
                    held,
                    source,
                    warnings,
                    out,
                );
                continue;
            }
        }
        // The key path as warnings write it (a budget file's keys without the file's label).
        let plain = path.strip_prefix(FILE_KEYS).unwrap_or(&path);
        let invalid = warnings.iter().any(|w| {
            w.split(": ").any(|part| {
                part == plain
                    || part
                        .strip_prefix(plain)
                        .is_some_and(|r| r.starts_with(['.', '[']))
            })
        });
        let setting = match held {
            Some(v) if !v.is_null() => Setting {
                key: path.clone(),
                value: if invalid {
                    format!("{} (invalid: see the warnings)", short(v))
                } else {
                    short(v)
                },
                origin: source(&path).unwrap_or_else(|| "default".into()),
            },
            _ => Setting {
                key: path.clone(),
                value: default_text(&format!("{default_prefix}{key}")),
                origin: "default".into(),
            },
        };
        out.push(setting);
    }
}

/// The pins in force (`crate::pins::Pins`): the settings' `relay.pins`, then the session's own.
fn pins_in_force(
    resolved: &ResolvedSettings,
    layers: &SettingsLayers,
    session: &[String],
) -> Vec<Setting> {
    let defaults = &resolved.relay.pins;
    let from = layers
        .source_of("relay.pins")
        .unwrap_or_else(|| "the settings".into());
    let pins = crate::pins::Pins { defaults, session };
    pins.in_force()
        .into_iter()
        .enumerate()
        .map(|(i, text)| Setting {
            key: (i + 1).to_string(),
            value: text,
            origin: if i < defaults.len() {
                format!("relay.pins in {from}")
            } else {
                "/relay pin in this session".into()
            },
        })
        .collect()
}

/// The default of a key path (`budget.` for the budget's keys, `compaction.` for Pi's), as shown.
pub fn default_text(path: &str) -> String {
    let d = BudgetConfig::default();
    match path {
        "enabled" | "continueAfterReset" | "memoryTool" | "inProgress" => "true".into(),
        "reminderMarginTokens" => DEFAULT_REMINDER_MARGIN_TOKENS.to_string(),
        "pins" => "[]".into(),
        "agentName" => format!("\"{DEFAULT_AGENT_NAME}\""),
        "role" => "unset (the hosting rule decides)".into(),
        "budget.mode" => format!("\"{}\"", d.mode.as_str()),
        "budget.enforceCwds" => "unset (everywhere)".into(),
        "budget.models" | "budget.resumeChecks" | "compaction.modelOverrides" => "{}".into(),
        "budget.maxHandoffsPerSession" => d.max_handoffs_per_session.to_string(),
        "budget.loop.maxHandoffsWithoutProgress" => {
            d.loop_guard.max_handoffs_without_progress.to_string()
        }
        "budget.loop.withinTurns" => d.loop_guard.within_turns.to_string(),
        "budget.overflowRecovery" => d.overflow_recovery.to_string(),
        "budget.idleMinutes" => DEFAULT_IDLE_MINUTES.to_string(),
        "budget.idleMinTokens" => DEFAULT_IDLE_MIN_TOKENS.to_string(),
        "budget.keepRecentTokens" => DEFAULT_KEEP_RECENT_TOKENS.to_string(),
        "compaction.reserveTokens" => DEFAULT_RESERVE_TOKENS.to_string(),
        "clearToolResults" | "clearToolResults.enabled" => "true".into(),
        "clearToolResults.triggerTokens" => format!(
            "{} (at least clearAtLeast before the reminder; none in a smaller window)",
            crate::clearing::DEFAULT_TRIGGER_TOKENS
        ),
        "clearToolResults.keep" => crate::settings::DEFAULT_CLEAR_KEEP.to_string(),
        "clearToolResults.clearAtLeast" => crate::settings::DEFAULT_CLEAR_AT_LEAST.to_string(),
        "clearToolResults.excludeTools" => "[] (Relay's notes and history results never)".into(),
        p if p.starts_with("budget.main.") || p.starts_with("budget.subagent.") => {
            "unset (derived from the window)".into()
        }
        _ => "built-in default".into(),
    }
}

/// Whether `raw` holds the dotted key path `path` (model keys quoted as `models."p/m".main`).
fn holds_path(raw: &Value, path: &str) -> bool {
    let mut cur = raw;
    let mut rest = path;
    while !rest.is_empty() {
        let (key, tail) = if let Some(quoted) = rest.strip_prefix('"') {
            let Some(end) = quoted.find('"') else {
                return false;
            };
            (
                quoted.get(..end).unwrap_or(""),
                quoted.get(end + 1..).unwrap_or(""),
            )
        } else {
            match rest.find('.') {
                Some(i) => (rest.get(..i).unwrap_or(""), rest.get(i..).unwrap_or("")),
                None => (rest, ""),
            }
        };
        let Some(next) = cur.get(key) else {
            return false;
        };
        cur = next;
        rest = tail.strip_prefix('.').unwrap_or(tail);
    }
    true
}

/// A value as shown in the report: compact JSON, at most 80 characters.
fn short(v: &Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", s.get(..i).unwrap_or_default()),
        None => s,
    }
}

/// The text `/relay config` and `relay config` print.
pub fn render_effective_config(report: &EffectiveConfig) -> String {
    let mut out = format!("relay config: {}\n", report.subject);
    let table = |out: &mut String, rows: &[Setting]| {
        let width = rows
            .iter()
            .map(|s| s.key.chars().count())
            .max()
            .unwrap_or(0);
        for s in rows {
            let pad = width - s.key.chars().count();
            out.push_str(&format!(
                "  {}{}  {}  ← {}\n",
                s.key,
                " ".repeat(pad),
                s.value,
                s.origin
            ));
        }
    };
    out.push_str("\nIn force:\n");
    table(&mut out, &report.in_force);
    out.push_str("\nEvery setting:\n");
    table(&mut out, &report.keys);
    if report.pins.is_empty() {
        out.push_str("\nPinned instructions: none\n");
    } else {
        out.push_str("\nPinned instructions (every window's boot block repeats them):\n");
        table(&mut out, &report.pins);
    }
    if report.warnings.is_empty() {
        out.push_str("\nWarnings: none\n");
    } else {
        out.push_str(&format!("\nWarnings ({}):\n", report.warnings.len()));
        for w in &report.warnings {
            out.push_str(&format!("  - {w}\n"));
        }
    }
    out.push_str(&format!(
        "\nFiles: global settings = Pi's settings.json in its agent directory; project settings = \
         {PROJECT_SETTINGS_FILE} (only when Pi trusts the project).\n"
    ));
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use serde_json::json;

    fn sources(global: Value, project: Option<Value>) -> ConfigSources {
        ConfigSources {
            global: Some(global),
            project,
            project_trusted: true,
            global_file: Some("/home/u/.pi/agent/settings.json".into()),
            agent_dir: Some("/home/u/.pi/agent".into()),
            cwd: Some("/work/app".into()),
            ..ConfigSources::default()
        }
    }

    fn query(model: &'static str, window: u64) -> ConfigQuery<'static> {
        ConfigQuery {
            model: Some(model),
            context_window: Some(window),
            model_origin: "Pi (the current model)",
            window_origin: "Pi (the current model)",
            role_origin: "the hosting rule",
            ..ConfigQuery::default()
        }
    }

    fn text(sources: &ConfigSources, query: &ConfigQuery) -> String {
        render_effective_config(&effective_config(sources, query))
    }

    #[test]
    fn defaults_for_a_200k_window() {
        let s = sources(json!({}), None);
        insta::assert_snapshot!(
            "config_defaults",
            text(&s, &query("anthropic/claude", 200_000))
        );
    }

    #[test]
    fn each_value_names_the_file_it_came_from() {
        let mut s = sources(
            json!({
                "relay": {"reminderMarginTokens": 8000, "colour": "red",
                          "budget": {"mode": "enforce", "enforceCwds": ["/work"],
                                     "idleMinutes": 20, "main": {"soft": "lots"}}},
                "compaction": {"reserveTokens": 20000,
                               "modelOverrides": {"openai/gpt": {"reserveTokens": 30000}}},
            }),
            Some(json!({"relay": {"role": "main",
                                  "budget": {"models": {"openai/gpt": {"main": {"hard": 150000}}}}}})),
        );
        s.state_dir = Some("/var/relay".into());
        s.resume_check_env = Some("make check".into());
        insta::assert_snapshot!("config_layers", text(&s, &query("openai/gpt", 400_000)));
        // The same settings, another model: the global reserve and the window-derived bands.
        let other = effective_config(&s, &query("a/b", 128_000));
        let row = |k: &str| other.in_force.iter().find(|r| r.key == k).unwrap().clone();
        assert_eq!(
            row("reserve").origin,
            "compaction.reserveTokens in global settings (/home/u/.pi/agent/settings.json)"
        );
        assert_eq!(row("hard").origin, "derived from the window");
        // An untrusted project's values do not apply, and are not named.
        s.project_trusted = false;
        let untrusted = effective_config(&s, &query("openai/gpt", 400_000));
        assert!(untrusted
            .in_force
            .iter()
            .chain(&untrusted.keys)
            .all(|r| !r.origin.contains("project")));
    }

    #[test]
    fn a_budget_file_named_by_the_environment_wins_over_relay_budget() {
        let mut s = sources(json!({"relay": {"budget": {"mode": "off"}}}), None);
        s.budget_config_env = Some("/etc/relay/budget.json".into());
        s.budget_file = Some(
            r#"{"mode": "enforce", "subagent": {"hard": 90000}, "loop": {"withinTurns": 4}}"#
                .into(),
        );
        let mut q = query("a/b", 1_000_000);
        q.hosted_subagent = true;
        insta::assert_snapshot!("config_budget_file", text(&s, &q));
        s.budget_file = None;
        let missing = effective_config(&s, &q);
        assert!(missing.warnings[0].starts_with("/etc/relay/budget.json: PI_CONTEXT_BUDGET_CONFIG names this file, which does not exist"));
    }

    /// Every key of the tables is listed: a key added to `RELAY_KEYS` or `BUDGET_KEYS` shows up
    /// without touching this module.
    #[test]
    fn every_key_of_the_tables_is_listed() {
        fn leaves(table: &[(&str, KeyKind)], prefix: &str, out: &mut Vec<String>) {
            for (key, kind) in table {
                match kind {
                    KeyKind::Object(inner) => leaves(inner, &format!("{prefix}{key}."), out),
                    _ => out.push(format!("{prefix}{key}")),
                }
            }
        }
        let mut want = Vec::new();
        for (key, kind) in RELAY_KEYS {
            if *key == "budget" {
                leaves(BUDGET_KEYS, "relay.budget.", &mut want);
            } else {
                leaves(std::slice::from_ref(&(*key, *kind)), "relay.", &mut want);
            }
        }
        leaves(COMPACTION_KEYS, "compaction.", &mut want);
        let report = effective_config(&sources(json!({}), None), &query("a/b", 100_000));
        let listed: Vec<&str> = report.keys.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(listed, want);
        assert!(
            report.keys.iter().all(|r| r.origin == "default"),
            "{:?}",
            report.keys
        );
    }

    #[test]
    fn an_unknown_window_is_said_so() {
        let s = sources(json!({}), None);
        let q = ConfigQuery {
            model_origin: "relay config (no --model)",
            window_origin: "relay config (no --window)",
            role_origin: "--role (default main)",
            ..ConfigQuery::default()
        };
        let report = effective_config(&s, &q);
        let row = |k: &str| report.in_force.iter().find(|r| r.key == k).unwrap().clone();
        assert_eq!(row("window").value, "unknown");
        assert_eq!(row("hard").value, "600,000 tokens");
        assert_eq!(row("hard").origin, "default (the window is unknown)");
    }
}
