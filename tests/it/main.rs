//! Integration tests: git sources against real repositories built in temporary directories
//! (a local path, a `file://` URL, and `git daemon` on 127.0.0.1), and the `plan` command line.

mod cli;
mod dir;
mod git;
mod support;
