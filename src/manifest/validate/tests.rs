//! Validation tests, one family at a time.
