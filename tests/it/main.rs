//! Integration tests, one binary: each module tests one area from the outside.

mod cli;
