//! `relay`: inspect and search Pi session files with the same history tools the model uses, list
//! sessions, notes, handoffs and running sessions, draw a session's timeline and count what
//! each of its windows cost.
//!
//! Exit status (every command): 0 success; 1 a well-formed request that found nothing (each
//! command's help says what that means for it); 2 bad arguments or unreadable input.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

mod cli;

use cli::Outcome;

#[derive(Parser, Debug)]
#[command(
    name = "relay",
    version,
    about = "Inspect and search Pi session files, notes, handoffs and running sessions",
    after_help = "`relay session [PI OPTIONS] -- @/abs/launch.md REQUEST` runs Pi under the pi-session relaunch wrapper.\n\
                  Exit status: 0 success, 1 nothing found (or nothing running), 2 bad arguments or unreadable input.\n\
                  Newest first unless --oldest-first. Malformed session lines are reported on stderr as FILE:LINE and skipped."
)]
struct Cli {
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

/// The history filters `items` and `search` share.
#[derive(Args, Debug, Default, Clone)]
struct Filters {
    /// Only items of this window (ids as `relay windows` prints them).
    #[arg(long)]
    window: Option<String>,
    /// Only items with this role.
    #[arg(long, value_enum)]
    role: Option<Role>,
    /// Only tool results whose tool name starts with `NS_`.
    #[arg(long = "tool-namespace", value_name = "NS")]
    tool_namespace: Option<String>,
    /// Only tool results of exactly this tool.
    #[arg(long = "tool-name", value_name = "NAME")]
    tool_name: Option<String>,
    /// At most this many entries.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    limit: Option<u64>,
    /// Oldest first.
    #[arg(long = "oldest-first")]
    oldest_first: bool,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
enum Role {
    User,
    Assistant,
    Tool,
    System,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum SessionRole {
    Main,
    Subagent,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ColorChoice {
    /// Colour when stdout is a terminal (and NO_COLOR is unset).
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The context windows of a session's current branch (exit 1: never; 2: unreadable file).
    Windows {
        /// A session file (*.jsonl).
        file: PathBuf,
        /// At most this many windows.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        limit: Option<u64>,
        /// Oldest first.
        #[arg(long = "oldest-first")]
        oldest_first: bool,
    },
    /// The items of a session, 50 by default, each cut to --max-chars (exit 1: no item matches).
    Items {
        /// A session file (*.jsonl).
        file: PathBuf,
        #[command(flatten)]
        filters: Filters,
        /// Cut each item to this many characters (default 1200).
        #[arg(long = "max-chars", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        max_chars: Option<u64>,
    },
    /// One item, whole or as a character range (exit 2: unknown window or item).
    Read {
        /// A session file (*.jsonl).
        file: PathBuf,
        /// The window id.
        window: String,
        /// The item id.
        item: String,
        /// Start at this character offset.
        #[arg(long, value_name = "N")]
        offset: Option<u64>,
        /// At most this many characters.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        limit: Option<u64>,
    },
    /// Search sessions for a case-sensitive literal text, in parallel, ranked: the session with
    /// the newest activity first, then the one with more matches (exit 1: no match).
    Search {
        /// The text to find (case-sensitive, literal).
        query: String,
        /// Session files or folders (searched recursively for *.jsonl); default: Pi's sessions folder.
        paths: Vec<PathBuf>,
        #[command(flatten)]
        filters: Filters,
        /// Highlight the matches: auto (on a terminal), always, never.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// The sessions in a folder, newest activity first: windows, size, last activity, title
    /// (exit 1: no session file found).
    Sessions {
        /// Default: Pi's sessions folder ($PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions).
        dir: Option<PathBuf>,
    },
    /// A session's notes, as the branch leaves them: list, print one, or export them as files
    /// (exit 1: no notes, or no note at --path).
    Notes {
        /// A session file (*.jsonl).
        file: PathBuf,
        /// Print this note.
        #[arg(long, value_name = "P", conflicts_with = "export")]
        path: Option<String>,
        /// Write every note as a file under DIR (never outside it).
        #[arg(long, value_name = "DIR")]
        export: Option<PathBuf>,
        /// With --export: replace files that already exist.
        #[arg(long, requires = "export")]
        force: bool,
    },
    /// The handoff files Relay wrote (`.ai-work/handoffs/` of a repository): list or show.
    Handoffs {
        #[command(subcommand)]
        action: Option<HandoffsAction>,
        /// The repository or folder holding `.ai-work/handoffs/` (default: the git root of the
        /// current directory, else the current directory).
        #[arg(long, value_name = "DIR", global = true)]
        dir: Option<PathBuf>,
    },
    /// The status files of Relay sessions, with liveness by pid (exit 1: none running).
    Status {
        /// The state folder (default: $PI_CONTEXT_BUDGET_STATE_DIR, else <agent dir>/context-budget).
        #[arg(long = "state-dir", value_name = "DIR")]
        state_dir: Option<PathBuf>,
        /// Also list sessions whose process is gone.
        #[arg(long)]
        all: bool,
    },
    /// Draw one session's context tokens per request, thresholds, resets and handoffs as an SVG
    /// or PNG (exit 1: the session has no request with usage to draw).
    Timeline {
        /// A session file (*.jsonl).
        file: PathBuf,
        /// Output file: .svg or .png (default: the session file's name with .svg).
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
        /// The model's context window in tokens: draws Relay's default reminder, soft, handoff
        /// and hard lines for it.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        window: Option<u64>,
        /// Pi's compaction reserve (used with --window).
        #[arg(long, value_name = "N", default_value_t = relay_core::settings::DEFAULT_RESERVE_TOKENS)]
        reserve: u64,
    },
    /// What each context window of a session's current branch cost: requests, the provider's
    /// input, cache-read, cache-write and output tokens, Pi's recorded cost, how the window ended,
    /// its clearings, and what Pi's summary compaction would have sent at the same boundary; the
    /// totals (exit 1: the branch holds no request).
    Stats {
        /// A session file (*.jsonl).
        file: PathBuf,
    },
    /// Every setting in force for a model and role, with where each value came from (default,
    /// derived from the window, global or project settings file, budget file, environment), and
    /// the warnings: the same text as `/relay config` in Pi.
    Config {
        /// The model, `provider/model-id` (default: Pi's defaultProvider/defaultModel setting).
        #[arg(long, value_name = "PROVIDER/MODEL")]
        model: Option<String>,
        /// The model's context window in tokens (the thresholds and the reminder derive from it).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        window: Option<u64>,
        /// The session's role when `relay.role` does not declare one.
        #[arg(long = "role", value_enum, default_value_t = SessionRole::Main)]
        session_role: SessionRole,
        /// The project folder (default: the current folder).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Apply the project's settings as for a trusted project (default: Pi's trust.json, else
        /// its defaultProjectTrust setting).
        #[arg(long, conflicts_with = "untrusted")]
        trusted: bool,
        /// Ignore the project's settings, as for an untrusted project.
        #[arg(long)]
        untrusted: bool,
    },
    /// Check this install: Pi's version, Relay's core for this platform, the settings, the state
    /// and handoff folders, pi-session on PATH; says what to fix (exit 1: a check failed).
    Doctor {
        /// The `pi` to check (default: the first on PATH).
        #[arg(long, value_name = "FILE")]
        pi: Option<PathBuf>,
        /// The project folder (default: the current folder).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand, Debug)]
enum HandoffsAction {
    /// List the handoffs, newest first (exit 1: none).
    List,
    /// Print one handoff: a path, a file name, or `<session>-<n>` (exit 1: not found).
    Show {
        /// Path, file name or `<sessionId>-<n>`; `latest` is the newest.
        handoff: String,
    },
}

fn main() -> ExitCode {
    // `relay session …` is the pi-session wrapper: its raw arguments are Pi's, so they reach it
    // before clap parses anything.
    let mut raw = std::env::args_os().skip(1);
    if raw.next().is_some_and(|a| a == "session") {
        return relay_cli::session::run(raw.collect());
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version exit 0 on stdout, usage errors 2 on stderr.
        Err(e) => e.exit(),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = run(cli, &mut out).and_then(|o| {
        out.flush()?;
        Ok(o)
    });
    match result {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Nothing(message)) => {
            if !message.is_empty() {
                eprintln!("relay: {message}");
            }
            ExitCode::from(1)
        }
        Err(e) => {
            if e.downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            // Every error is unreadable input, a bad argument or a failed write: status 2.
            eprintln!("relay: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let json = cli.json;
    match cli.command {
        Command::Windows {
            file,
            limit,
            oldest_first,
        } => cli::history::windows(&file, limit, oldest_first, json, out),
        Command::Items {
            file,
            filters,
            max_chars,
        } => cli::history::items(&file, &filters.tool_args(), max_chars, json, out),
        Command::Read {
            file,
            window,
            item,
            offset,
            limit,
        } => cli::history::read(&file, &window, &item, offset, limit, json, out),
        Command::Search {
            query,
            paths,
            filters,
            color,
        } => cli::search::run(
            &cli::search::Request {
                query,
                paths,
                args: filters.tool_args(),
                window: filters.window.clone(),
                color: cli::color_enabled(color),
                json,
            },
            out,
        ),
        Command::Sessions { dir } => cli::sessions::run(dir, json, out),
        Command::Notes {
            file,
            path,
            export,
            force,
        } => cli::notes::run(&file, path.as_deref(), export.as_deref(), force, json, out),
        Command::Handoffs { action, dir } => match action {
            None | Some(HandoffsAction::List) => cli::handoffs::list(dir, json, out),
            Some(HandoffsAction::Show { handoff }) => cli::handoffs::show(dir, &handoff, json, out),
        },
        Command::Status { state_dir, all } => cli::status::run(state_dir, all, json, out),
        Command::Timeline {
            file,
            output,
            window,
            reserve,
        } => cli::timeline::run(&file, output, window, reserve, json, out),
        Command::Stats { file } => cli::stats::run(&file, json, out),
        Command::Config {
            model,
            window,
            session_role,
            cwd,
            trusted,
            untrusted,
        } => cli::config::config(
            cli::config::ConfigRequest {
                model,
                window,
                subagent: session_role == SessionRole::Subagent,
                cwd,
                trusted: match (trusted, untrusted) {
                    (true, _) => Some(true),
                    (_, true) => Some(false),
                    _ => None,
                },
            },
            json,
            out,
        ),
        Command::Doctor { pi, cwd } => cli::config::doctor(pi, cwd, json, out),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "relay", &mut script);
            if json {
                let doc = serde_json::json!({
                    "shell": shell.to_string(),
                    "script": String::from_utf8_lossy(&script),
                });
                writeln!(out, "{doc}")?;
            } else {
                out.write_all(&script)?;
            }
            Ok(Outcome::Done)
        }
    }
}

impl Filters {
    /// The history tools' arguments for these filters.
    fn tool_args(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut a = serde_json::Map::new();
        if let Some(w) = &self.window {
            a.insert("window_id".into(), w.clone().into());
        }
        if let Some(r) = self.role {
            let role = match r {
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::Tool => "tool",
                Role::System => "system",
            };
            a.insert("role".into(), role.into());
        }
        if let Some(ns) = &self.tool_namespace {
            a.insert("tool_namespace".into(), ns.clone().into());
        }
        if let Some(n) = &self.tool_name {
            a.insert("tool_name".into(), n.clone().into());
        }
        if let Some(l) = self.limit {
            a.insert("limit".into(), l.into());
        }
        if self.oldest_first {
            a.insert("recent_first".into(), false.into());
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
