//! Pi's command line as the wrapper needs to see it: which tokens are options (kept on a
//! relaunch), which of them select a session (dropped on a relaunch), which are messages and
//! `@file` arguments (never replayed), and where the wrapper's own `--` is.
//!
//! Pi's parser (`dist/cli/args.js` of the installed Pi) reads every argument as a whole token:
//! no clustering of short options (`-nbt` is one flag), no `--name=value` for its built-in
//! options (such a token is an extension flag), and a value-taking option takes the next token
//! whatever it looks like. lexopt's parser follows the usual conventions instead, so the tokens
//! whose meaning differs are classified whole through lexopt's raw-argument access
//! ([`lexopt::Parser::try_raw_args`]) before its parser would split them; everything else goes
//! through the parser.

use std::ffi::{OsStr, OsString};

use lexopt::prelude::*;

/// Pi 1.6.0's built-in options that take a value (the next token).
const VALUED_LONG: &[&str] = &[
    "provider",
    "model",
    "api-key",
    "system-prompt",
    "append-system-prompt",
    "mode",
    "session",
    "session-id",
    "fork",
    "session-dir",
    "name",
    "models",
    "tools",
    "exclude-tools",
    "thinking",
    "extension",
    "skill",
    "prompt-template",
    "theme",
    "use-theme",
    "tui-mode",
    "export",
];

/// Short forms of value-taking options (`-n`, `-t`, `-e`) and of flags (`-p`, `-c`, …).
const VALUED_SHORT: &[char] = &['n', 't', 'e'];
const FLAG_SHORT: &[char] = &['p', 'c', 'r', 'h', 'v', 'a'];

/// Pi's short flags of more than one letter: one token each.
const MULTI_SHORT: &[&str] = &["-nt", "-nbt", "-ne", "-ns", "-np", "-nc", "-na", "-xt"];

/// Multi-letter short options that take a value (`-xt <tools>`).
const MULTI_SHORT_VALUED: &[&str] = &["-xt"];

/// Options that choose which existing session Pi opens. A relaunch starts a fresh session, so
/// they are dropped: `--continue`/`-c` and `--resume`/`-r` would reopen the old session (or ask
/// for one), `--session <path|id>` and `--session-id <id>` open the old one by name, and
/// `--fork <path|id>` would fork the old session again. `--session-dir` is kept: it says where
/// sessions are stored, and the fresh session belongs there too. `--no-session` is kept (an
/// ephemeral session stays ephemeral), and so is `--name`.
const SELECTORS: &[&str] = &[
    "--continue",
    "-c",
    "--resume",
    "-r",
    "--session",
    "--session-id",
    "--fork",
];

/// One command-line token group as Pi reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// An option with its value, if it takes one, exactly as given.
    Option { raw: Vec<OsString>, selector: bool },
    /// A message or an `@file` argument.
    Positional(OsString),
}

/// The parsed command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PiArgs {
    pub tokens: Vec<Token>,
    /// The arguments after the wrapper's `--` (the launch prompt file and the request).
    pub after_separator: Vec<OsString>,
    /// `--mode rpc`: an RPC client drives Pi and reconnects by itself.
    pub rpc: bool,
}

impl PiArgs {
    /// The first launch: the user's arguments in their order, without the wrapper's `--`. When
    /// an argument after it starts with `-` (a message Pi would read as an option), Pi's own
    /// `--` is put back in front of them, so Pi still reads them as messages.
    pub fn first_launch(&self) -> Vec<OsString> {
        let mut out: Vec<OsString> = Vec::new();
        for t in &self.tokens {
            match t {
                Token::Option { raw, .. } => out.extend(raw.iter().cloned()),
                Token::Positional(p) => out.push(p.clone()),
            }
        }
        if self
            .after_separator
            .iter()
            .any(|a| a.as_encoded_bytes().starts_with(b"-"))
        {
            out.push("--".into());
        }
        out.extend(self.after_separator.iter().cloned());
        out
    }

    /// A relaunch: the options without the session selectors, then `@<launch prompt>` when the
    /// marker names one, then the prompt to continue from the handoff. Messages and `@file`
    /// arguments of the first launch are not replayed.
    pub fn relaunch(&self, launch_prompt: Option<&str>, continue_prompt: &str) -> Vec<OsString> {
        let mut out: Vec<OsString> = Vec::new();
        for t in &self.tokens {
            if let Token::Option {
                raw,
                selector: false,
            } = t
            {
                out.extend(raw.iter().cloned());
            }
        }
        if let Some(lp) = launch_prompt {
            out.push(format!("@{lp}").into());
        }
        out.push(continue_prompt.into());
        out
    }
}

/// A command line the wrapper cannot read; the message names the argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError(pub String);

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err(e: lexopt::Error) -> ArgError {
    ArgError(e.to_string())
}

fn is_selector(first: &OsStr) -> bool {
    SELECTORS.iter().any(|s| first == OsStr::new(s))
}

/// Parse Pi's arguments (without the program name).
pub fn parse(args: Vec<OsString>) -> Result<PiArgs, ArgError> {
    let mut out = PiArgs::default();
    let mut p = lexopt::Parser::from_args(args);
    loop {
        // Tokens Pi reads whole, taken before lexopt's parser would split or reinterpret them.
        if let Some(mut raw) = p.try_raw_args() {
            if raw.next_if(|a| a == "--").is_some() {
                out.after_separator = raw.collect();
                break;
            }
            if let Some(flag) = raw.next_if(|a| MULTI_SHORT.iter().any(|m| a == OsStr::new(m))) {
                let mut group = vec![flag.clone()];
                if MULTI_SHORT_VALUED.iter().any(|m| flag == OsStr::new(m)) {
                    match raw.next() {
                        Some(v) => group.push(v),
                        None => {
                            return Err(ArgError(format!(
                                "{} needs a value",
                                flag.to_string_lossy()
                            )))
                        }
                    }
                }
                out.tokens.push(Token::Option {
                    raw: group,
                    selector: false,
                });
                continue;
            }
            // `--flag=value` is an extension flag to Pi, even with a built-in name: kept verbatim.
            if let Some(tok) = raw.next_if(|a| {
                let b = a.as_encoded_bytes();
                b.starts_with(b"--") && b.contains(&b'=')
            }) {
                out.tokens.push(Token::Option {
                    raw: vec![tok],
                    selector: false,
                });
                continue;
            }
            // A single-dash token Pi does not know (`-x`, `-cp`): Pi reports it; kept verbatim.
            if let Some(tok) = raw.next_if(|a| {
                let b = a.as_encoded_bytes();
                b.len() > 1
                    && b.first() == Some(&b'-')
                    && b.get(1) != Some(&b'-')
                    && !(b.len() == 2
                        && b.get(1).is_some_and(|c| {
                            VALUED_SHORT.contains(&char::from(*c))
                                || FLAG_SHORT.contains(&char::from(*c))
                        }))
            }) {
                out.tokens.push(Token::Option {
                    raw: vec![tok],
                    selector: false,
                });
                continue;
            }
        }
        let Some(arg) = p.next().map_err(err)? else {
            break;
        };
        match arg {
            Long(name) => {
                let name = name.to_string();
                let flag: OsString = format!("--{name}").into();
                let valued = VALUED_LONG.contains(&name.as_str());
                let mut raw = vec![flag.clone()];
                if valued {
                    // Pi takes the next token as the value, even one that starts with `-`.
                    let value = p.raw_args().map_err(err)?.next().ok_or_else(|| {
                        ArgError(format!("{} needs a value", flag.to_string_lossy()))
                    })?;
                    if name == "mode" && value == "rpc" {
                        out.rpc = true;
                    }
                    raw.push(value);
                }
                let selector = is_selector(&flag);
                out.tokens.push(Token::Option { raw, selector });
            }
            Short(c) => {
                let flag: OsString = format!("-{c}").into();
                let mut raw = vec![flag.clone()];
                if VALUED_SHORT.contains(&c) {
                    let value = p.raw_args().map_err(err)?.next().ok_or_else(|| {
                        ArgError(format!("{} needs a value", flag.to_string_lossy()))
                    })?;
                    raw.push(value);
                }
                let selector = is_selector(&flag);
                out.tokens.push(Token::Option { raw, selector });
            }
            Value(v) => out.tokens.push(Token::Positional(v)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    fn strs(v: &[OsString]) -> Vec<String> {
        v.iter().map(|s| s.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn selectors_are_dropped_and_the_separator_found() {
        let given = [
            "--model",
            "faux/faux-1",
            "-c",
            "--session",
            "/s.jsonl",
            "-nbt",
            "-e",
            "/x.ts",
            "--session-dir",
            "/d",
            "--plan=yes",
            "-p",
            "hi",
            "--",
            "@/abs/launch.md",
            "-request",
        ];
        let a = parse(os(&given)).unwrap();
        // The first launch passes the command line on whole.
        assert_eq!(strs(&a.first_launch()), given);
        assert_eq!(
            strs(&a.relaunch(Some("/abs/launch.md"), "go on")),
            [
                "--model",
                "faux/faux-1",
                "-nbt",
                "-e",
                "/x.ts",
                "--session-dir",
                "/d",
                "--plan=yes",
                "-p",
                "@/abs/launch.md",
                "go on"
            ]
        );
        assert!(!a.rpc);
    }

    #[test]
    fn values_are_whole_tokens_even_with_a_dash() {
        let a = parse(os(&[
            "--system-prompt",
            "-be terse",
            "-xt",
            "bash",
            "--resume",
            "--fork",
            "abc",
            "--session-id",
            "id",
            "q",
        ]))
        .unwrap();
        assert_eq!(
            strs(&a.relaunch(None, "c")),
            ["--system-prompt", "-be terse", "-xt", "bash", "c"]
        );
        // No wrapper `--`: the request stays where it was.
        assert_eq!(
            strs(&a.first_launch()).last().map(String::as_str),
            Some("q")
        );
    }

    #[test]
    fn rpc_mode_is_recognised_and_missing_values_name_the_option() {
        assert!(parse(os(&["--mode", "rpc"])).unwrap().rpc);
        assert_eq!(
            parse(os(&["--model"])).unwrap_err().0,
            "--model needs a value"
        );
        assert_eq!(parse(os(&["-xt"])).unwrap_err().0, "-xt needs a value");
    }
}
