//! Configuration: the raw sources the adapter collects become Relay's settings, Pi's compaction
//! reserve and the budget policy configuration.
//!
//! **Contract.** Precedence is decided in Rust ([`crate::settings::SettingsLayers`]: Pi's own merge,
//! the project only when trusted); the budget policy file, when there is one, wins over
//! `relay.budget` (a file named by `PI_CONTEXT_BUDGET_CONFIG` that does not exist gives the
//! defaults and a warning, never `relay.budget`). Every problem is reported at once, naming the
//! file and the key path; each key falls back to its safe default. Configuring never fails and
//! runs on every input (the budget file is re-read by the binding each time).
//!
//! Pi's reserve is kept per model ([`ReserveTokens`]) and looked up for the moment's model at every
//! use ([`Engine::reserve_for`]); the role is `relay.role` when declared, else the hosting rule
//! ([`Engine::is_subagent`]).

use super::budget::select_budget;
use super::files::{TelemetryEvent, TelemetryLine};
use super::wire::{ConfigSources, Effect, HookReply, NotifyLevel};
use super::Engine;
use crate::scheduler::SchedInput;
use crate::settings::{RelayConfig, ReserveTokens, Role};
use crate::ConfigIssue;

/// Relay's settings in the engine.
pub(super) struct Settings {
    pub(super) config: RelayConfig,
    /// Pi's compaction reserve, per model (`compaction.modelOverrides`).
    pub(super) reserve: ReserveTokens,
    /// `/relay on|off` for the rest of this runtime; wins over the `enabled` setting.
    pub(super) toggle: Option<bool>,
    /// `PI_RESUME_CHECK` as the host reported it with the configuration.
    pub(super) resume_check_env: Option<String>,
    /// The sources of the last configuration, for `/relay config`.
    pub(super) sources: Option<ConfigSources>,
    /// Whether the `memory` tool was last declared (`Some(true)`) or withheld (`Some(false)`);
    /// `None` before the first configuration.
    pub(super) memory_declared: Option<bool>,
}

impl Settings {
    pub(super) fn new() -> Self {
        Settings {
            config: RelayConfig::default(),
            reserve: ReserveTokens::default(),
            toggle: None,
            resume_check_env: None,
            sources: None,
            memory_declared: None,
        }
    }
}

impl Engine {
    /// Pi's compaction reserve for the moment's model (its `compaction.modelOverrides` entry, else
    /// `compaction.reserveTokens`): the one lookup behind the remaining figure, the reminder, the
    /// derived thresholds and the status.
    pub(super) fn reserve_for(&self, moment: &super::wire::Moment) -> u64 {
        self.settings.reserve.for_model(moment.model.as_deref())
    }

    /// Whether this session runs in the subagent role: `relay.role` when the host declared it,
    /// else the process-wide hosting rule the adapter reports (`moment.subagent`).
    pub(super) fn is_subagent(&self, moment: &super::wire::Moment) -> bool {
        match self.settings.config.role {
            Some(role) => role == Role::Subagent,
            None => moment.subagent,
        }
    }

    /// Validate and apply configuration; every problem is reported with its file and key path.
    pub(crate) fn configure(&mut self, sources: &ConfigSources) -> Vec<ConfigIssue> {
        let layers = sources.settings_layers();
        let (resolved, mut issues) = layers.resolve();
        if let Some(why) = &sources.guards_error {
            issues.push(guards_issue(sources, why));
        }
        self.budget.wrapper_facts = sources.wrapper.clone();
        self.settings.resume_check_env = sources.resume_check_env.clone();
        self.settings.sources = Some(sources.clone());
        let (budget, budget_issues) = select_budget(sources, resolved.relay.budget.as_ref());
        issues.extend(budget_issues.into_iter().map(|i| layers.attribute(i)));
        self.settings.reserve = resolved.reserve_tokens;
        self.budget.configure(
            budget,
            sources.cwd.as_deref().unwrap_or(""),
            sources.resolved_state_dir().is_some(),
        );
        let was_enabled = self.settings.toggle.unwrap_or(self.settings.config.enabled);
        let now_enabled = self.settings.toggle.unwrap_or(resolved.relay.enabled);
        self.settings.config = resolved.relay;
        if was_enabled != now_enabled {
            self.scheduler.handle(SchedInput::SetEnabled(now_enabled));
            self.restore_allowance();
        }
        issues
    }

    /// Relay's tools as the settings declare them, when that changed since the last
    /// configuration (the first one always says it: a resumed session's recorded tool loadout may
    /// lack a tool the settings now declare). `relay.memoryTool: false` withholds `memory`.
    fn declared_tools(&mut self) -> Option<Effect> {
        let memory = self.settings.config.memory_tool;
        if self.settings.memory_declared == Some(memory) {
            return None;
        }
        self.settings.memory_declared = Some(memory);
        let names = vec![crate::memory_tool::TOOL.to_string()];
        Some(if memory {
            Effect::ActiveTools {
                withhold: Vec::new(),
                restore: names,
            }
        } else {
            Effect::ActiveTools {
                withhold: names,
                restore: Vec::new(),
            }
        })
    }

    /// The same, answering with a reply whose effects report each issue once (`seen` holds what
    /// this runtime already reported).
    pub(crate) fn configure_reply(
        &mut self,
        sources: &ConfigSources,
        seen: &mut Vec<String>,
    ) -> HookReply {
        let issues = self.configure(sources);
        let mut reply = HookReply::default();
        reply.effects.extend(self.declared_tools());
        for issue in issues {
            let text = format!("relay: {issue}");
            if !seen.contains(&text) {
                seen.push(text.clone());
                reply.effects.push(Effect::Telemetry {
                    event: Box::new(TelemetryLine {
                        // No clock here: the binding stamps the time when it writes the event.
                        ts: None,
                        session_id: self.mirror.history.session_id().to_string(),
                        window_id: None,
                        mode: None,
                        would: false,
                        event: TelemetryEvent::Error {
                            kind: "config".into(),
                            path: Some(issue.path.clone()),
                            message: issue.message.clone(),
                        },
                    }),
                });
                reply.effects.push(Effect::Notify {
                    text,
                    level: NotifyLevel::Warning,
                });
            }
        }
        reply
    }
}

/// The one warning about a guard library that exists but was not loaded: it names the file.
fn guards_issue(sources: &ConfigSources, why: &str) -> ConfigIssue {
    let file = match sources.agent_dir.as_deref().filter(|d| !d.is_empty()) {
        Some(dir) => format!("{}/lib/guards.ts", dir.trim_end_matches('/')),
        None => "lib/guards.ts".to_string(),
    };
    ConfigIssue {
        path: format!("guard library ({file})"),
        message: format!("not loaded ({why}); the context guard is unavailable"),
    }
}
