//! Configuration: the raw sources the adapter collects become Relay's settings, Pi's compaction
//! reserve and the budget policy configuration.
//!
//! **Contract.** Precedence is decided in Rust ([`crate::config::SettingsLayers`]: Pi's own merge,
//! the project only when trusted); the budget policy file, when there is one, wins over
//! `relay.budget`. Every problem is reported at once, naming the file and the key path; each key
//! falls back to its safe default. Configuring never fails and may run on every input (the budget
//! file is re-read by the binding each time).

use super::budget::select_budget;
use super::wire::{ConfigSources, Effect, HookReply, NotifyLevel};
use super::Engine;
use crate::config::{RelayConfig, SettingsLayers, DEFAULT_RESERVE_TOKENS};
use crate::scheduler::SchedInput;
use crate::ConfigIssue;

/// Relay's settings in the engine.
pub(super) struct Settings {
    pub(super) config: RelayConfig,
    /// Pi's `compaction.reserveTokens`.
    pub(super) reserve_tokens: u64,
    /// `/relay on|off` for the rest of this runtime; wins over the `enabled` setting.
    pub(super) toggle: Option<bool>,
}

impl Settings {
    pub(super) fn new() -> Self {
        Settings {
            config: RelayConfig::default(),
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
            toggle: None,
        }
    }
}

impl Engine {
    /// Validate and apply configuration; every problem is reported with its file and key path.
    pub fn configure(&mut self, sources: &ConfigSources) -> Vec<ConfigIssue> {
        let layers = SettingsLayers::merge(
            sources.global.as_ref(),
            sources.project.as_ref(),
            sources.project_trusted,
            sources.project_error.as_deref(),
            sources.global_file.as_deref(),
        );
        let (resolved, mut issues) = layers.resolve();
        let (budget, budget_issues) = select_budget(sources, resolved.relay.budget.as_ref());
        issues.extend(budget_issues.into_iter().map(|i| layers.attribute(i)));
        self.settings.reserve_tokens = resolved.reserve_tokens;
        self.budget.configure(
            budget,
            sources.cwd.as_deref().unwrap_or(""),
            sources.state_dir.is_some(),
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

    /// The same, answering with a reply whose effects report each issue once (`seen` holds what
    /// this runtime already reported).
    pub fn configure_reply(
        &mut self,
        sources: &ConfigSources,
        seen: &mut Vec<String>,
    ) -> HookReply {
        let issues = self.configure(sources);
        let mut reply = HookReply::default();
        for issue in issues {
            let text = format!("relay: {issue}");
            if !seen.contains(&text) {
                seen.push(text.clone());
                reply.effects.push(Effect::Notify {
                    text,
                    level: NotifyLevel::Warning,
                });
            }
        }
        reply
    }
}
