//! The wording the renderers share: the table (`table`) and the pull-request comment
//! (`markdown`) say the same things about a plan in their own layout, so the sentences they
//! have in common are written here once. A renderer keeps only what is its own format (its
//! layout, quoting and escaping, and the phrases it words differently on purpose).

/// `1 node`, `3 nodes`: a number and a noun with a regular plural.
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
