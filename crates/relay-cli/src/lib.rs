//! The library half of relay-cli: the `pi-session` relaunch wrapper, shared by the `pi-session`
//! binary and `relay session`.

// Relay runs on Unix only: Linux, and macOS (type-checked, never run there). It uses Unix process
// groups, file modes and O_NOFOLLOW (`std::os::unix`, rustix) with no Windows equivalent.
#[cfg(not(unix))]
compile_error!(
    "Relay does not support Windows (or any non-Unix target): it needs Unix process groups, file modes and O_NOFOLLOW. Build it on Linux or macOS."
);

pub mod session;
