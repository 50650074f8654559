//! Which hosts Relay runs on: Pi (`@earendil-works/pi-coding-agent`) 1.3 or newer, on Node.js. The
//! extension reports the host package's `VERSION` and `CONFIG_DIR_NAME` and the JavaScript runtime
//! when it loads; this module decides whether Relay registers anything at all.
//!
//! **Forks.** The oh-my-pi fork (`@oh-my-pi/pi-coding-agent`, the `omp` command) maps imports of
//! Pi's package onto its own, so Relay's extension loads there and reads omp's version (18.x),
//! which the version check alone would take for a recent Pi. Relay is not tested on it (it runs on
//! Bun, keeps its settings in `.omp`, and its session and compaction interfaces are its own), so a
//! host whose settings folder is not Pi's `.pi`, or that runs on Bun, is refused by name.

/// The oldest Pi release Relay is tested against (`make test` runs the extension and end-to-end
/// tests on it and on the current release).
pub const MIN_PI_VERSION: semver::Version = semver::Version::new(1, 3, 0);

/// Pi's `CONFIG_DIR_NAME`: the settings folder (`~/.pi`, `<project>/.pi`).
pub const PI_CONFIG_DIR: &str = ".pi";

/// `None` when Relay supports this host, else the message the user sees instead of Relay's tools
/// (the extension then registers nothing and the host runs without Relay). `config_dir` is the
/// host package's `CONFIG_DIR_NAME`, `runtime` the JavaScript runtime (`node 22.19.0`,
/// `bun 1.4.5`); a fork is refused before its version is looked at.
pub fn host_refusal(version: &str, config_dir: &str, runtime: &str) -> Option<String> {
    let on_bun = runtime.trim_start().starts_with("bun");
    if config_dir != PI_CONFIG_DIR || on_bun {
        let name = if config_dir == ".omp" {
            "oh-my-pi (@oh-my-pi/pi-coding-agent), a fork of Pi"
        } else if config_dir != PI_CONFIG_DIR {
            "a fork of Pi"
        } else {
            "Pi on Bun"
        };
        return Some(format!(
            "relay: this host is {name}: version {}, settings folder {config_dir:?}, runtime {}. Relay supports only Pi (@earendil-works/pi-coding-agent) {MIN_PI_VERSION} or newer on Node.js, the hosts it is tested on; it is not loaded (the host runs without it). Run Relay under `pi`.",
            version.trim(),
            runtime.trim()
        ));
    }
    pi_version_refusal(version)
}

/// `None` when Relay supports Pi `version`, else the message the user sees instead of Relay's
/// tools (the extension then registers nothing and Pi runs as if Relay were not installed).
/// A version that does not parse is refused too: it names what was read.
pub fn pi_version_refusal(version: &str) -> Option<String> {
    match semver::Version::parse(version.trim()) {
        Ok(v) if v >= MIN_PI_VERSION => None,
        Ok(v) => Some(format!(
            "relay: Pi {v} is older than {MIN_PI_VERSION}, the oldest Pi Relay supports; Relay is not loaded (Pi runs without it). Update Pi to {MIN_PI_VERSION} or newer."
        )),
        Err(e) => Some(format!(
            "relay: cannot read Pi's version {version:?} ({e}); Relay is not loaded (Pi runs without it). Relay needs Pi {MIN_PI_VERSION} or newer."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_versions_load_and_older_ones_are_refused_by_name() {
        for ok in ["1.3.0", "1.3.1", "1.6.0", "2.0.0", "1.4.0-beta.1"] {
            assert_eq!(pi_version_refusal(ok), None, "{ok}");
        }
        let refusals = ["1.2.9", "1.0.3", "0.87.1", "1.3.0-rc.1", "not-a-version"]
            .map(|v| pi_version_refusal(v).unwrap_or_default())
            .join("\n");
        insta::assert_snapshot!("pi_version_refusals", refusals);
    }

    #[test]
    fn forks_are_refused_by_name_whatever_their_version() {
        assert_eq!(host_refusal("1.6.0", ".pi", "node 22.19.0"), None);
        assert_eq!(
            host_refusal("0.87.1", ".pi", "node 22.19.0"),
            pi_version_refusal("0.87.1")
        );
        let refusals = [
            // What oh-my-pi 18.2.3 reports through its Pi compatibility layer (tests/e2e/oh-my-pi.test.mjs).
            ("18.2.3", ".omp", "bun 1.4.5"),
            // Pi itself under Bun, and another fork on Node.js.
            ("1.6.0", ".pi", "bun 1.4.5"),
            ("2.0.0", ".other", "node 22.19.0"),
        ]
        .map(|(v, dir, rt)| host_refusal(v, dir, rt).unwrap_or_default())
        .join("\n");
        insta::assert_snapshot!("host_refusals", refusals);
    }
}
