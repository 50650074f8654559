//! Thresholds per model and role (the seed's, derived from the window and Pi's reserve, or
//! configured, partial overrides completed by the default ratios) and the policy's parameters.

use serde::Serialize;

use super::{BudgetConfig, LoopGuard};

/// Effective thresholds for one model and role. Invariant: `0 < soft <= handoff <= hard` and
/// `min_progress > 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Thresholds {
    pub soft: u64,
    pub handoff: u64,
    pub hard: u64,
    pub min_progress: u64,
}

/// The seed's fixed defaults for large windows (main sessions).
pub const SEED_MAIN: Thresholds = Thresholds {
    soft: 300_000,
    handoff: 400_000,
    hard: 600_000,
    min_progress: 50_000,
};
/// The seed's fixed defaults for large windows (subagent sessions).
pub const SEED_SUBAGENT: Thresholds = Thresholds {
    soft: 150_000,
    handoff: 200_000,
    hard: 300_000,
    min_progress: 25_000,
};

/// Thresholds derived from the model's window when nothing is configured.
///
/// - `usable = max(window - reserve, window / 2)`: Pi starts its own compaction at
///   `window - reserveTokens`; a reserve larger than half the window (tiny models) is ignored
///   beyond half so that something remains;
/// - `hard = 90%` of `usable` (the 10% margin leaves room to write a handoff at hard);
/// - `handoff = 75%` of `hard`, `soft = 60%` of `hard`, `minProgress = hard / 12`;
/// - each value is then capped by the seed's fixed default for the role (main 300k/400k/600k/50k,
///   subagent 150k/200k/300k/25k): a seed value applies exactly when the derived value is at least
///   as large, i.e. when the window is large enough to hold it (main: hard reaches 600k from a
///   window of about 683k with Pi's default 16k reserve);
/// - every value is at least 1 (a window of 0 is treated as unknown and yields the seed defaults).
///
/// Examples (reserve 16,384): 8k window → 3686/2764/2211, 200k → 165254/123940/99152,
/// 1M → the seed defaults.
pub fn derived_thresholds(context_window: u64, reserve_tokens: u64, subagent: bool) -> Thresholds {
    let seed = if subagent { SEED_SUBAGENT } else { SEED_MAIN };
    if context_window == 0 {
        return seed;
    }
    let w = context_window as u128;
    let usable = (w.saturating_sub(reserve_tokens as u128)).max(w / 2);
    let hard = (usable * 9 / 10).max(1);
    let handoff = (hard * 3 / 4).max(1);
    let soft = (hard * 3 / 5).max(1);
    let min_progress = (hard / 12).max(1);
    let cap = |v: u128, s: u64| -> u64 { (v.min(s as u128)) as u64 };
    Thresholds {
        soft: cap(soft, seed.soft),
        handoff: cap(handoff, seed.handoff),
        hard: cap(hard, seed.hard),
        min_progress: cap(min_progress, seed.min_progress),
    }
}

/// Resolve the thresholds for `model_key` (`"provider/model-id"`) in a main or subagent session.
///
/// 1. **Explicit values.** A `models[model_key].<role>` value wins. A `<role>` value joins it only
///    where it keeps the order with the model's values (soft ≤ handoff ≤ hard): a role value that
///    would cross a model value does not apply to this model. So `main: {300k, 400k, 600k}` with
///    `models."p/m".main.hard: 150000` gives p/m its own three bands below 150,000.
/// 2. **Nothing explicit** (no soft, handoff or hard at either level): the values derived from the
///    window ([`derived_thresholds`]).
/// 3. **Some explicit:** the missing bands are derived from the given ones with the default ratios
///    (soft = 60 % and handoff = 75 % of hard), never from the window:
///    - hard = the given hard, else handoff ÷ 0.75, else soft ÷ 0.6;
///    - handoff = 75 % of hard, unless that is not above a given soft: then midway between soft
///      and hard;
///    - soft = 60 % of hard; with a given handoff that hard was derived from, or that 60 % of
///      hard would not be below, 80 % of handoff (the same 60 : 75 ratio).
///
///    `hard: 150000` alone gives 90,000 / 112,500 / 150,000.
/// 4. `minProgress` = the explicit value (model, then role), else hard ÷ 12 capped at the seed's
///    value for the role (for derived thresholds that is exactly the derived value).
///
/// Invariant: `0 < soft <= handoff <= hard` and `min_progress > 0`. A set that is out of order within
/// one level never gets here: [`parse_budget_config`] reports it and drops it.
pub fn resolve_thresholds(
    cfg: &BudgetConfig,
    model_key: &str,
    context_window: u64,
    reserve_tokens: u64,
    subagent: bool,
) -> Thresholds {
    let seed = if subagent { SEED_SUBAGENT } else { SEED_MAIN };
    let role = if subagent { &cfg.subagent } else { &cfg.main };
    let model = cfg
        .models
        .get(model_key)
        .map(|m| if subagent { m.subagent } else { m.main })
        .unwrap_or_default();
    let model_bands = [model.soft, model.handoff, model.hard];
    let role_bands = [role.soft, role.handoff, role.hard];
    // A role value fits when it keeps the order with every model value.
    let fits = |i: usize, v: u64| {
        model_bands.iter().enumerate().all(|(j, m)| match m {
            Some(m) if j < i => *m <= v,
            Some(m) if j > i => v <= *m,
            _ => true,
        })
    };
    let mut bands = model_bands;
    for (i, (slot, role_value)) in bands.iter_mut().zip(role_bands).enumerate() {
        if slot.is_none() {
            *slot = role_value.filter(|v| fits(i, *v));
        }
    }
    let min_progress_given = model.min_progress.or(role.min_progress);
    let [soft, handoff, hard] = bands;
    if bands.iter().all(Option::is_none) {
        let derived = derived_thresholds(context_window, reserve_tokens, subagent);
        return Thresholds {
            min_progress: min_progress_given.unwrap_or(derived.min_progress).max(1),
            ..derived
        };
    }
    let (s, h, x) = (
        soft.map(u128::from),
        handoff.map(u128::from),
        hard.map(u128::from),
    );
    let hard_v = x
        .or(h.map(|h| h * 4 / 3))
        .or(s.map(|s| s * 5 / 3))
        .unwrap_or(1)
        .max(1);
    let handoff_v = h.unwrap_or_else(|| {
        let d = hard_v * 3 / 4;
        match (s, x) {
            // Only soft: 75 : 60 of it, without rounding through the derived hard.
            (Some(s), None) => s * 5 / 4,
            (Some(s), Some(_)) if d <= s => (s + hard_v) / 2,
            _ => d,
        }
    });
    let soft_v = s.unwrap_or_else(|| {
        let d = hard_v * 3 / 5;
        if h.is_some() && (x.is_none() || d >= handoff_v) {
            handoff_v * 4 / 5
        } else {
            d.min(handoff_v)
        }
    });
    let to_u64 = |v: u128| u64::try_from(v).unwrap_or(u64::MAX).max(1);
    let hard_t = to_u64(hard_v);
    Thresholds {
        soft: to_u64(soft_v),
        handoff: to_u64(handoff_v),
        hard: hard_t,
        min_progress: min_progress_given
            .unwrap_or_else(|| (hard_t / 12).min(seed.min_progress))
            .max(1),
    }
}

/// The policy's parameters for one session: resolved thresholds and the commit guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PolicyParams {
    pub thresholds: Thresholds,
    pub max_handoffs_per_session: u32,
    pub loop_guard: LoopGuard,
    /// `idleMinTokens`: the settle-time context size from which pending work asks for an idle
    /// handoff.
    pub idle_min_tokens: u64,
    /// `idleMinutes` in milliseconds: how long the agent must have been inactive before new input
    /// resets the window with a stored handoff first (idle-input recovery).
    pub idle_ms: u64,
    /// `keepRecentTokens`: idle-input recovery only resets a window holding more than this many
    /// tokens (a smaller one has nothing worth dropping).
    pub keep_recent_tokens: u64,
    /// This runtime owns a pi-session wrapper and a handoff file is known to continue from: an
    /// armed fallback relaunches Pi in a fresh process at the settle point
    /// ([`super::PolicyEffect::Relaunch`]) instead of resetting the window mechanically. Not
    /// configuration: the engine sets it from the hosting facts.
    pub relaunch: bool,
}

/// `idleMinTokens` when the configuration has none.
pub const DEFAULT_IDLE_MIN_TOKENS: u64 = 300_000;
/// `idleMinutes` when the configuration has none (seed 004's Config table).
pub const DEFAULT_IDLE_MINUTES: f64 = 50.0;
/// `keepRecentTokens` when the configuration has none (seed 004's Config table; Pi's default).
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;

impl PolicyParams {
    pub fn resolve(
        cfg: &BudgetConfig,
        model_key: &str,
        context_window: u64,
        reserve_tokens: u64,
        subagent: bool,
    ) -> Self {
        PolicyParams {
            thresholds: resolve_thresholds(
                cfg,
                model_key,
                context_window,
                reserve_tokens,
                subagent,
            ),
            max_handoffs_per_session: cfg.max_handoffs_per_session,
            loop_guard: cfg.loop_guard,
            idle_min_tokens: cfg.idle_min_tokens.unwrap_or(DEFAULT_IDLE_MIN_TOKENS),
            idle_ms: minutes_to_ms(cfg.idle_minutes.unwrap_or(DEFAULT_IDLE_MINUTES)),
            keep_recent_tokens: cfg.keep_recent_tokens.unwrap_or(DEFAULT_KEEP_RECENT_TOKENS),
            relaunch: false,
        }
    }
}

/// Minutes (positive and finite once validated) as whole milliseconds, at least 1.
fn minutes_to_ms(minutes: f64) -> u64 {
    let ms = (minutes * 60_000.0).round();
    if ms.is_finite() && ms >= 1.0 {
        // Saturating: `as` clamps values beyond u64::MAX.
        ms as u64
    } else {
        1
    }
}
