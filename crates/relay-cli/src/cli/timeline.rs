//! `relay timeline FILE [-o OUT.svg|OUT.png] [--window N]`: one picture of a session's current
//! branch.
//!
//! - **x**: the requests in order (each assistant message that recorded usage is one request;
//!   request `k` of `n` sits at the middle of the `k`-th of `n` equal slots), the first and last
//!   request's time under the axis.
//! - **y**: the context tokens of each request (the assistant message's `usage.totalTokens`),
//!   joined within a window, broken at every reset.
//! - **Lines** (with `--window N`): Relay's defaults for that window, as the budget and the
//!   reminder derive them when nothing is configured: the reminder (the window minus reserve and
//!   margin), soft, handoff and hard ([`derived_thresholds`]), and the window itself. Compaction
//!   details carry no window or thresholds, so without `--window` the picture has none and says so.
//! - **Markers**: every compaction of the branch is a vertical line between the last request of
//!   the old window and the first of the new one (at `x0 + plot_width * k / n` after request
//!   `k`): blue for a handoff, purple for Relay's other resets, grey for Pi's own compactions;
//!   labelled with the new window's id (its last segment), what opened it (kind, commit) and its
//!   source, and what it dropped: the compaction's `tokensBefore` and the messages of the old
//!   window.
//!
//! - **Clearings**: every tool-result clearing (`relay/clear-tool-results`) is a short green tick
//!   on the x axis after the request it followed, labelled with the tokens it freed (`−72k`).
//!
//! SVG elements carry classes and data attributes (`class="marker handoff"`,
//! `data-window-id`, `data-x`) so the picture can be checked by machine. The PNG is the same SVG
//! rasterised with resvg (system fonts for the labels).

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use relay_core::engine::wire::CLEARING_TYPE;
use relay_core::entry::{EntryKind, WindowMarker};
use relay_core::policy::derived_thresholds;
use relay_core::records::{ClearingRecord, Record};
use relay_core::settings::{reminder_threshold, DEFAULT_REMINDER_MARGIN_TOKENS};
use serde_json::{json, Value};

use super::history::load_session;
use super::{fatal, Outcome};

/// Picture size and plot area, in pixels.
pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 680;
pub const PLOT_LEFT: f64 = 90.0;
pub const PLOT_RIGHT: f64 = 1160.0;
pub const PLOT_TOP: f64 = 150.0;
pub const PLOT_BOTTOM: f64 = 590.0;

/// Marker colours (also what the PNG check looks for).
pub const HANDOFF_COLOR: &str = "#1d4ed8";
pub const RESET_COLOR: &str = "#9333ea";
pub const COMPACTION_COLOR: &str = "#6b7280";
const LINE_COLOR: &str = "#0f766e";

/// One request: its number (1-based), tokens, time, and window index.
#[derive(Debug, Clone)]
pub struct Request {
    pub n: usize,
    pub tokens: u64,
    pub at: String,
    pub window: usize,
}

/// One reset (a compaction on the branch).
#[derive(Debug, Clone)]
pub struct Marker {
    /// Requests before it.
    pub after: usize,
    pub window_id: String,
    pub previous_window_id: Option<String>,
    /// "handoff", "reset" (Relay's) or "compaction" (Pi's own).
    pub kind: &'static str,
    pub commit: Option<String>,
    pub source: Option<String>,
    pub tokens_before: Option<u64>,
    pub dropped_messages: usize,
    pub handoff_path: Option<String>,
    pub at: String,
}

/// One tool-result clearing (a `relay/clear-tool-results` record on the branch).
#[derive(Debug, Clone)]
pub struct Clearing {
    /// Requests before it.
    pub after: usize,
    pub window_id: String,
    pub items: u64,
    pub tokens_freed: u64,
    pub at: String,
}

/// The colour of a clearing's tick.
pub const CLEARING_COLOR: &str = "#16a34a";

/// A threshold line.
#[derive(Debug, Clone)]
pub struct Threshold {
    pub name: &'static str,
    pub tokens: u64,
    pub color: &'static str,
}

/// What the picture shows.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub session_id: String,
    pub requests: Vec<Request>,
    pub markers: Vec<Marker>,
    pub clearings: Vec<Clearing>,
    pub window: Option<u64>,
    pub thresholds: Vec<Threshold>,
}

pub fn run(
    file: &Path,
    output: Option<PathBuf>,
    window: Option<u64>,
    reserve: u64,
    json: bool,
    out: &mut dyn Write,
) -> Result<Outcome> {
    let output = match output {
        Some(o) => o,
        None => PathBuf::from(format!(
            "{}.svg",
            file.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "timeline".into())
        )),
    };
    let format = match output.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") => "svg",
        Some(e) if e.eq_ignore_ascii_case("png") => "png",
        _ => bail!(fatal(format!(
            "-o {}: the output must end in .svg or .png",
            output.display()
        ))),
    };
    let timeline = collect(file, window, reserve)?;
    if timeline.requests.is_empty() {
        return Ok(Outcome::Nothing(format!(
            "{} has no request with recorded usage: nothing to draw",
            file.display()
        )));
    }
    let svg = render_svg(&timeline);
    let bytes = match format {
        "png" => render_png(&svg)?,
        _ => svg.into_bytes(),
    };
    std::fs::write(&output, bytes)
        .map_err(|e| fatal(format!("cannot write {}: {e}", output.display())))?;
    if json {
        writeln!(out, "{}", summary(&timeline, &output))?;
    } else {
        writeln!(
            out,
            "wrote {} ({} requests, {} windows, {} resets, {} tool-result clearings freeing {} tokens)",
            output.display(),
            timeline.requests.len(),
            timeline.markers.len() + 1,
            timeline.markers.len(),
            timeline.clearings.len(),
            thousands(timeline.clearings.iter().map(|c| c.tokens_freed).sum())
        )?;
    }
    Ok(Outcome::Done)
}

/// Reads the requests and resets of `file`'s current branch.
pub fn collect(file: &Path, window: Option<u64>, reserve: u64) -> Result<Timeline> {
    let loaded = load_session(file)?;
    let mut requests = Vec::new();
    let mut markers = Vec::new();
    let mut clearings = Vec::new();
    let mut messages_in_window = 0usize;
    for &i in &loaded.branch {
        let Some(entry) = loaded.parsed.entries.get(i) else {
            continue;
        };
        match &entry.kind {
            EntryKind::Message(m) => {
                messages_in_window += 1;
                if m.role == "assistant" {
                    if let Some(tokens) = m.usage_total.filter(|t| *t > 0) {
                        requests.push(Request {
                            n: requests.len() + 1,
                            tokens,
                            at: entry.timestamp.clone(),
                            window: markers.len(),
                        });
                    }
                }
            }
            EntryKind::Compaction {
                tokens_before,
                details,
                ..
            } => {
                let (record, marker) = WindowMarker::read(details);
                // Pi's own compaction (or another package's): no window marker to show.
                let record = record.unwrap_or_default();
                markers.push(Marker {
                    after: requests.len(),
                    window_id: record
                        .window_id
                        .unwrap_or_else(|| format!("compaction {}", entry.id)),
                    previous_window_id: record.previous_window_id,
                    kind: marker.kind,
                    commit: marker.commit,
                    source: record.source,
                    tokens_before: *tokens_before,
                    dropped_messages: messages_in_window,
                    handoff_path: record.handoff_path,
                    at: entry.timestamp.clone(),
                });
                messages_in_window = 0;
            }
            EntryKind::Custom { custom_type, data } if custom_type == CLEARING_TYPE => {
                let record = ClearingRecord::read(data).unwrap_or_default();
                clearings.push(Clearing {
                    after: requests.len(),
                    window_id: record.window_id,
                    items: record.items,
                    tokens_freed: record.tokens_freed,
                    at: entry.timestamp.clone(),
                });
            }
            _ => {}
        }
    }
    let thresholds = match window {
        Some(w) => {
            let t = derived_thresholds(w, reserve, false);
            let reminder = w.saturating_sub(reminder_threshold(
                w,
                reserve,
                DEFAULT_REMINDER_MARGIN_TOKENS,
            ));
            vec![
                Threshold {
                    name: "soft",
                    tokens: t.soft,
                    color: "#ca8a04",
                },
                Threshold {
                    name: "handoff",
                    tokens: t.handoff,
                    color: "#ea580c",
                },
                Threshold {
                    name: "hard",
                    tokens: t.hard,
                    color: "#dc2626",
                },
                Threshold {
                    name: "reminder",
                    tokens: reminder,
                    color: "#0891b2",
                },
                Threshold {
                    name: "window",
                    tokens: w,
                    color: "#111827",
                },
            ]
        }
        None => Vec::new(),
    };
    Ok(Timeline {
        session_id: loaded.history.session_id().to_string(),
        requests,
        markers,
        clearings,
        window,
        thresholds,
    })
}

/// The x of request `n` (1-based) of `count`.
pub fn request_x(n: usize, count: usize) -> f64 {
    PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * (n as f64 - 0.5) / count.max(1) as f64
}

/// The x of a reset after `after` of `count` requests, on a whole pixel.
pub fn marker_x(after: usize, count: usize) -> f64 {
    (PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * after as f64 / count.max(1) as f64).round()
}

/// A round top for the y axis at or above `max`, and its tick step.
fn axis(max: u64) -> (u64, u64) {
    let max = max.max(1);
    let raw = max as f64 / 5.0;
    let mag = 10f64.powi(raw.log10().floor() as i32);
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
        .max(1.0) as u64;
    (max.div_ceil(step) * step, step)
}

fn tokens_label(t: u64) -> String {
    if t >= 1_000_000 && t.is_multiple_of(100_000) {
        format!("{}M", t as f64 / 1e6)
    } else if t >= 1000 && t.is_multiple_of(1000) {
        format!("{}k", t / 1000)
    } else if t >= 1000 {
        format!("{:.1}k", t as f64 / 1000.0)
    } else {
        t.to_string()
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `HH:MM:SS` of an ISO timestamp (its own offset), or the text as is.
fn clock(at: &str) -> String {
    at.get(11..19).unwrap_or(at).to_string()
}

fn short_window(id: &str) -> &str {
    id.rsplit(':').next().unwrap_or(id)
}

/// What opened the window, in words: "handoff (budget)", "reset (forcedHard)", "Pi compaction".
fn opened_by(m: &Marker) -> String {
    let what = match m.kind {
        "handoff" => "handoff",
        "reset" => "reset",
        _ => "Pi compaction",
    };
    match &m.commit {
        Some(c) => format!("{what} ({c})"),
        None => what.to_string(),
    }
}

pub fn marker_color(kind: &str) -> &'static str {
    match kind {
        "handoff" => HANDOFF_COLOR,
        "reset" => RESET_COLOR,
        _ => COMPACTION_COLOR,
    }
}

/// The picture as SVG text.
pub fn render_svg(t: &Timeline) -> String {
    let n = t.requests.len();
    let top_value = t
        .requests
        .iter()
        .map(|r| r.tokens)
        .chain(t.thresholds.iter().map(|l| l.tokens))
        .max()
        .unwrap_or(1);
    let (y_max, step) = axis(top_value + top_value / 20);
    let scale = Scale { y_max };
    let mut s = String::new();
    push_header(&mut s, t, n);
    push_frame(&mut s, scale, step);
    push_thresholds(&mut s, t, scale);
    push_x_axis(&mut s, t, n);
    push_markers(&mut s, t, n);
    push_clearings(&mut s, t, n);
    push_tokens(&mut s, t, n, scale);
    push_legend(&mut s);
    s.push_str("</svg>\n");
    s
}

/// The y axis: tokens to a y coordinate in the plot.
#[derive(Clone, Copy)]
struct Scale {
    y_max: u64,
}

impl Scale {
    fn y(self, tokens: u64) -> f64 {
        PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * tokens as f64 / self.y_max as f64
    }
}

/// The SVG element, its background, the title and the subtitle (what the lines are).
fn push_header(s: &mut String, t: &Timeline, n: usize) {
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Verdana, sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r##"<rect class="background" x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>"##
    );
    // Title and what the lines are.
    let _ = writeln!(
        s,
        r##"<text class="title" x="{PLOT_LEFT}" y="28" font-size="17" font-weight="bold" fill="#111827">Context tokens per request · session {}</text>"##,
        esc(&t.session_id)
    );
    let subtitle = match t.window {
        Some(w) => format!(
            "{n} requests · {} windows · lines: Relay's defaults for a {} token window",
            t.markers.len() + 1,
            thousands(w)
        ),
        None => format!(
            "{n} requests · {} windows · window unknown: pass --window N for the reminder, soft, handoff and hard lines",
            t.markers.len() + 1
        ),
    };
    let subtitle = if t.clearings.is_empty() {
        subtitle
    } else {
        format!(
            "{subtitle} · {} tool-result clearings freed {} tokens",
            t.clearings.len(),
            thousands(t.clearings.iter().map(|c| c.tokens_freed).sum())
        )
    };
    let _ = writeln!(
        s,
        r##"<text class="subtitle" x="{PLOT_LEFT}" y="48" fill="#4b5563">{}</text>"##,
        esc(&subtitle)
    );
}

/// The plot frame, the y grid with its labels, and the y axis title.
fn push_frame(s: &mut String, scale: Scale, step: u64) {
    let plot_h = PLOT_BOTTOM - PLOT_TOP;
    let y_max = scale.y_max;
    // Plot frame and the y grid.
    let _ = writeln!(
        s,
        r##"<rect class="plot" x="{PLOT_LEFT}" y="{PLOT_TOP}" width="{}" height="{plot_h}" fill="#f9fafb" stroke="#d1d5db"/>"##,
        PLOT_RIGHT - PLOT_LEFT
    );
    let mut tick = 0;
    while tick <= y_max {
        let ty = scale.y(tick);
        let _ = writeln!(
            s,
            r##"<line class="grid" x1="{PLOT_LEFT}" y1="{ty:.1}" x2="{PLOT_RIGHT}" y2="{ty:.1}" stroke="#e5e7eb"/><text x="{}" y="{:.1}" text-anchor="end" fill="#374151">{}</text>"##,
            PLOT_LEFT - 8.0,
            ty + 4.0,
            tokens_label(tick)
        );
        tick += step;
    }
    let _ = writeln!(
        s,
        r##"<text x="24" y="{:.1}" transform="rotate(-90 24 {:.1})" text-anchor="middle" fill="#374151">context tokens</text>"##,
        (PLOT_TOP + PLOT_BOTTOM) / 2.0,
        (PLOT_TOP + PLOT_BOTTOM) / 2.0
    );
}

/// The threshold lines with their labels.
fn push_thresholds(s: &mut String, t: &Timeline, scale: Scale) {
    // Threshold lines, labelled at the right end just above the line; when another line runs
    // just above it, the label goes below its line, and when lines crowd both sides, to the left.
    let ys: Vec<f64> = t.thresholds.iter().map(|l| scale.y(l.tokens)).collect();
    for l in &t.thresholds {
        let ly = scale.y(l.tokens);
        let near = |lo: f64, hi: f64| ys.iter().any(|other| *other > lo && *other < hi);
        let above_free = !near(ly - 16.0, ly - 0.5);
        let below_free = !near(ly + 0.5, ly + 16.0);
        let (lx, anchor, ty) = if above_free {
            (PLOT_RIGHT - 6.0, "end", ly - 5.0)
        } else if below_free {
            (PLOT_RIGHT - 6.0, "end", ly + 14.0)
        } else {
            (PLOT_LEFT + 6.0, "start", ly - 5.0)
        };
        let dash = if l.name == "window" {
            ""
        } else {
            r#" stroke-dasharray="8 5""#
        };
        let _ = writeln!(
            s,
            r##"<line class="threshold {name}" data-tokens="{tokens}" x1="{PLOT_LEFT}" y1="{ly:.1}" x2="{PLOT_RIGHT}" y2="{ly:.1}" stroke="{color}" stroke-width="1.5"{dash}/><text x="{lx}" y="{:.1}" text-anchor="{anchor}" fill="{color}">{name} {}</text>"##,
            ty,
            thousands(l.tokens),
            name = l.name,
            tokens = l.tokens,
            color = l.color,
        );
    }
}

/// The x axis: request numbers and the first and last time.
fn push_x_axis(s: &mut String, t: &Timeline, n: usize) {
    // x axis: request numbers and the first and last time.
    let every = n.div_ceil(12).max(1);
    for r in t
        .requests
        .iter()
        .filter(|r| r.n == 1 || r.n.is_multiple_of(every) || r.n == n)
    {
        let x = request_x(r.n, n);
        let _ = writeln!(
            s,
            r##"<text class="xtick" x="{x:.1}" y="{}" text-anchor="middle" fill="#374151">{}</text>"##,
            PLOT_BOTTOM + 18.0,
            r.n
        );
    }
    if let (Some(first), Some(last)) = (t.requests.first(), t.requests.last()) {
        let _ = writeln!(
            s,
            r##"<text x="{PLOT_LEFT}" y="{}" fill="#6b7280">{}</text><text x="{}" y="{}" text-anchor="middle" fill="#374151">request (in order)</text><text x="{PLOT_RIGHT}" y="{}" text-anchor="end" fill="#6b7280">{}</text>"##,
            PLOT_BOTTOM + 38.0,
            esc(&clock(&first.at)),
            (PLOT_LEFT + PLOT_RIGHT) / 2.0,
            PLOT_BOTTOM + 38.0,
            PLOT_BOTTOM + 38.0,
            esc(&clock(&last.at)),
        );
    }
}

/// The reset markers and their labels.
fn push_markers(s: &mut String, t: &Timeline, n: usize) {
    // Reset markers with their labels in up to three rows above the plot, each label in the
    // first row where it overlaps no other. When the full labels cannot be placed so, every label
    // takes its compact form (the window's id and kind, the tokens dropped); the full text stays
    // in the marker's tooltip.
    let full: Vec<(String, String)> = t.markers.iter().map(full_label).collect();
    let compact: Vec<(String, String)> = t.markers.iter().map(compact_label).collect();
    let xs: Vec<f64> = t.markers.iter().map(|m| marker_x(m.after, n)).collect();
    let (labels, places) = match place_labels(&xs, &full) {
        Some(p) => (&full, p),
        None => {
            let p = place_labels(&xs, &compact).unwrap_or_else(|| {
                xs.iter()
                    .enumerate()
                    .map(|(k, x)| (k % LABEL_ROWS, anchor_for(*x, 90.0)))
                    .collect()
            });
            (&compact, p)
        }
    };
    for (k, m) in t.markers.iter().enumerate() {
        let x = xs.get(k).copied().unwrap_or(PLOT_LEFT);
        let color = marker_color(m.kind);
        let (row, anchor) = places.get(k).copied().unwrap_or((0, "start"));
        let label_y = 66.0 + row as f64 * 30.0;
        let dx = if anchor == "end" { -4.0 } else { 4.0 };
        let (first, second) = labels.get(k).cloned().unwrap_or_default();
        let tooltip = full
            .get(k)
            .map(|(a, b)| format!("{a}; {b}"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            r##"<g class="marker {kind}" data-window-id="{wid}" data-x="{x}" data-after="{after}"><title>{tip}</title><line x1="{x}" y1="{y1}" x2="{x}" y2="{PLOT_BOTTOM}" stroke="{color}" stroke-width="3" shape-rendering="crispEdges"/><text x="{tx}" y="{label_y}" text-anchor="{anchor}" fill="{color}" font-weight="bold">{first}</text><text x="{tx}" y="{l2}" text-anchor="{anchor}" fill="#374151">{second}</text></g>"##,
            tip = esc(&tooltip),
            kind = m.kind,
            wid = esc(&m.window_id),
            after = m.after,
            y1 = label_y + 18.0,
            tx = x + dx,
            l2 = label_y + 13.0,
            first = esc(&first),
            second = esc(&second),
        );
    }
}

/// The tool-result clearings.
fn push_clearings(s: &mut String, t: &Timeline, n: usize) {
    // Tool-result clearings: a tick on the x axis after the request they followed.
    for c in &t.clearings {
        let x = marker_x(c.after, n);
        let _ = writeln!(
            s,
            r##"<g class="clearing" data-window-id="{wid}" data-x="{x}" data-after="{after}" data-tokens-freed="{freed}"><title>{title}</title><line x1="{x}" y1="{y1}" x2="{x}" y2="{PLOT_BOTTOM}" stroke="{CLEARING_COLOR}" stroke-width="2" stroke-dasharray="3 2"/><text x="{tx}" y="{ty}" fill="{CLEARING_COLOR}">−{label}</text></g>"##,
            wid = esc(&c.window_id),
            after = c.after,
            freed = c.tokens_freed,
            title = esc(&format!(
                "tool-result clearing at {}: {} results, {} tokens freed",
                clock(&c.at),
                c.items,
                thousands(c.tokens_freed)
            )),
            y1 = PLOT_BOTTOM - 40.0,
            tx = x + 3.0,
            ty = PLOT_BOTTOM - 30.0,
            label = tokens_label(c.tokens_freed),
        );
    }
}

/// The tokens per request: a polyline per window and a dot per request.
fn push_tokens(s: &mut String, t: &Timeline, n: usize, scale: Scale) {
    // The tokens: one polyline per window, a dot per request.
    let windows = t.markers.len() + 1;
    for w in 0..windows {
        let pts: Vec<String> = t
            .requests
            .iter()
            .filter(|r| r.window == w)
            .map(|r| format!("{:.1},{:.1}", request_x(r.n, n), scale.y(r.tokens)))
            .collect();
        if pts.len() > 1 {
            let _ = writeln!(
                s,
                r#"<polyline class="tokens" data-window="{w}" points="{}" fill="none" stroke="{LINE_COLOR}" stroke-width="2"/>"#,
                pts.join(" ")
            );
        }
    }
    for r in &t.requests {
        let _ = writeln!(
            s,
            r##"<circle class="request" data-n="{}" data-tokens="{}" cx="{:.1}" cy="{:.1}" r="3.5" fill="{LINE_COLOR}"><title>request {}: {} tokens at {}</title></circle>"##,
            r.n,
            r.tokens,
            request_x(r.n, n),
            scale.y(r.tokens),
            r.n,
            thousands(r.tokens),
            esc(&r.at)
        );
    }
}

/// The legend under the plot.
fn push_legend(s: &mut String) {
    // Legend.
    let ly = HEIGHT as f64 - 22.0;
    let mut lx = PLOT_LEFT;
    for (label, color) in [
        ("tokens per request", LINE_COLOR),
        ("handoff", HANDOFF_COLOR),
        ("reset", RESET_COLOR),
        ("Pi compaction", COMPACTION_COLOR),
    ] {
        let _ = writeln!(
            s,
            r##"<rect x="{lx}" y="{}" width="14" height="4" fill="{color}"/><text x="{}" y="{ly}" fill="#374151">{label}</text>"##,
            ly - 6.0,
            lx + 20.0
        );
        lx += 30.0 + label.len() as f64 * 7.5;
    }
}

/// Rows of marker labels above the plot.
const LABEL_ROWS: usize = 3;
/// Estimated width of one label character (12 px DejaVu Sans, bold), in pixels.
const LABEL_CHAR_PX: f64 = 7.4;

/// The full label of a marker: the new window, what opened it and from where; what it dropped.
fn full_label(m: &Marker) -> (String, String) {
    let mut first = format!("→ window {} · {}", short_window(&m.window_id), opened_by(m));
    if let Some(src) = m.source.as_deref().filter(|src| *src != m.kind) {
        let _ = write!(first, " · from {src}");
    }
    let dropped = match m.tokens_before {
        Some(tb) => format!(
            "dropped {} tokens, {} messages",
            thousands(tb),
            m.dropped_messages
        ),
        None => format!("dropped {} messages", m.dropped_messages),
    };
    (first, dropped)
}

/// The compact label: the window's id and kind; the tokens dropped.
fn compact_label(m: &Marker) -> (String, String) {
    (
        format!("{} {}", short_window(&m.window_id), m.kind),
        m.tokens_before.map_or_else(
            || format!("{} msgs", m.dropped_messages),
            |tb| format!("−{} · {} msgs", tokens_label(tb), m.dropped_messages),
        ),
    )
}

/// Labels start right of their line, or end left of it when they would leave the picture.
fn anchor_for(x: f64, width: f64) -> &'static str {
    if x + 4.0 + width > WIDTH as f64 - 8.0 {
        "end"
    } else {
        "start"
    }
}

/// A row and anchor for each label so that no two labels of a row overlap; `None` when some
/// label fits in no row.
fn place_labels(xs: &[f64], labels: &[(String, String)]) -> Option<Vec<(usize, &'static str)>> {
    let mut rows: Vec<Vec<(f64, f64)>> = vec![Vec::new(); LABEL_ROWS];
    let mut places = Vec::new();
    for (x, (a, b)) in xs.iter().zip(labels) {
        let width = a.chars().count().max(b.chars().count()) as f64 * LABEL_CHAR_PX;
        let anchor = anchor_for(*x, width);
        let span = if anchor == "end" {
            (x - 4.0 - width, x - 4.0)
        } else {
            (x + 4.0, x + 4.0 + width)
        };
        let row = rows.iter().position(|r| {
            r.iter()
                .all(|(lo, hi)| span.1 + 10.0 < *lo || span.0 > *hi + 10.0)
        })?;
        rows.get_mut(row)?.push(span);
        places.push((row, anchor));
    }
    Some(places)
}

/// The SVG rasterised at its own size.
pub fn render_png(svg: &str) -> Result<Vec<u8>> {
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = resvg::usvg::Tree::from_str(svg, &opt)
        .map_err(|e| anyhow::anyhow!("internal error: the timeline SVG does not parse: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| anyhow::anyhow!("internal error: empty picture"))?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| anyhow::anyhow!("cannot encode the PNG: {e}"))
}

fn summary(t: &Timeline, output: &Path) -> Value {
    let n = t.requests.len();
    json!({
        "output": output.display().to_string(),
        "width": WIDTH,
        "height": HEIGHT,
        "session_id": t.session_id,
        "window": t.window,
        "thresholds": t.thresholds.iter().map(|l| json!({"name": l.name, "tokens": l.tokens})).collect::<Vec<_>>(),
        "requests": t.requests.iter().map(|r| json!({"n": r.n, "tokens": r.tokens, "at": r.at, "window": r.window})).collect::<Vec<_>>(),
        "markers": t.markers.iter().map(|m| json!({
            "after_request": m.after,
            "x": marker_x(m.after, n),
            "window_id": m.window_id,
            "previous_window_id": m.previous_window_id,
            "kind": m.kind,
            "commit": m.commit,
            "source": m.source,
            "tokens_before": m.tokens_before,
            "dropped_messages": m.dropped_messages,
            "handoff_path": m.handoff_path,
            "at": m.at,
        })).collect::<Vec<_>>(),
        "clearings": t.clearings.iter().map(|c| json!({
            "after_request": c.after,
            "x": marker_x(c.after, n),
            "window_id": c.window_id,
            "items": c.items,
            "tokens_freed": c.tokens_freed,
            "at": c.at,
        })).collect::<Vec<_>>(),
    })
}
