//! The library half of relay-cli: the `pi-session` relaunch wrapper, shared by the `pi-session`
//! binary and `relay session`.

pub mod session;
