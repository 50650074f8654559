//! Which Pi versions Relay runs on. The extension reports the host's `VERSION` when it loads; this
//! module decides whether Relay registers anything at all.

/// The oldest Pi release Relay is tested against (`make test` runs the extension and end-to-end
/// tests on it and on the current release).
pub const MIN_PI_VERSION: semver::Version = semver::Version::new(1, 3, 0);

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
}
