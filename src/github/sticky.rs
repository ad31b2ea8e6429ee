//! The sticky comment: one comment per pull request and comment key, found again by its
//! marker and edited in place, split into numbered parts when the plan is long.
//!
//! [`reconcile`] decides, from the comments already there, what to update, create and delete;
//! it is pure. [`sync`] lists the comments (all pages), asks it, and carries the actions out.

use super::GithubError;
use super::client::{Client, IssueComment};
use crate::report::markdown::{PART_MARKER_PREFIX, marker};

/// Whose comments may be taken as ours: a marker in someone else's comment is never edited
/// or deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Author {
    /// The token's own account (a personal or fine-grained token: `GET /user` names it).
    Login(String),
    /// Any bot account: the workflow's `GITHUB_TOKEN` (`github-actions[bot]`) or an app
    /// token, which cannot ask who it is.
    AnyBot,
}

impl Author {
    fn wrote(&self, c: &IssueComment) -> bool {
        match (self, &c.user) {
            (Author::Login(login), Some(u)) => &u.login == login,
            (Author::AnyBot, Some(u)) => u.kind == "Bot",
            (_, None) => false,
        }
    }
}

/// One of our comments: its id and the part it holds (from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// Comment id.
    pub id: u64,
    /// Part number.
    pub part: usize,
}

/// Our comments among `comments`: by `author`, the first line the marker of `key` (alone,
/// or followed by the one-line report); the part number from the second line (none: part 1).
pub fn ours(comments: &[IssueComment], key: &str, author: &Author) -> Vec<Part> {
    let marker = marker(key);
    comments
        .iter()
        .filter(|c| author.wrote(c))
        .filter_map(|c| {
            let body = c.body.as_deref()?;
            let mut lines = body.lines().map(|l| l.trim_end_matches('\r'));
            let first = lines.next()?;
            let rest = first.strip_prefix(&marker)?;
            if !(rest.is_empty() || rest.starts_with(' ')) {
                return None;
            }
            let part = lines
                .next()
                .and_then(|l| l.strip_prefix(PART_MARKER_PREFIX)?.strip_suffix(" -->"))
                .and_then(|n| n.parse().ok())
                .filter(|&n: &usize| n >= 1)
                .unwrap_or(1);
            Some(Part { id: c.id, part })
        })
        .collect()
}

/// One change to the pull request's comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Replace the body of comment `id` with part `part`.
    Update {
        /// Comment id.
        id: u64,
        /// Part number (from 1).
        part: usize,
    },
    /// Post part `part` as a new comment.
    Create {
        /// Part number (from 1).
        part: usize,
    },
    /// Delete comment `id`: a part the plan no longer has, or a duplicate.
    Delete {
        /// Comment id.
        id: u64,
    },
}

/// What to do so that the pull request shows exactly `parts` parts: each part edits the
/// oldest existing comment of its number, or is created; every other comment of ours (surplus
/// parts of a longer earlier plan, duplicates left by an interrupted run) is deleted. A
/// `quiet` plan (one line saying nothing changes) creates nothing when no comment exists.
pub fn reconcile(existing: &[Part], parts: usize, quiet: bool) -> Vec<Action> {
    if quiet && existing.is_empty() {
        return Vec::new();
    }
    let mut sorted = existing.to_vec();
    sorted.sort_by_key(|p| (p.part, p.id));
    let mut used = Vec::new();
    let mut actions = Vec::new();
    for part in 1..=parts {
        match sorted.iter().find(|p| p.part == part) {
            Some(p) => {
                used.push(p.id);
                actions.push(Action::Update { id: p.id, part });
            }
            None => actions.push(Action::Create { part }),
        }
    }
    actions.extend(
        sorted
            .iter()
            .filter(|p| !used.contains(&p.id))
            .map(|p| Action::Delete { id: p.id }),
    );
    actions
}

/// What [`sync`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Synced {
    /// The URL of part 1, when a comment exists now.
    pub url: Option<String>,
    /// Comments created, updated and deleted.
    pub created: usize,
    /// Comments edited in place.
    pub updated: usize,
    /// Comments deleted.
    pub deleted: usize,
}

/// Makes pull request `number` show `parts` (each starting with the marker of `key`) as its
/// sticky comment of that key.
pub async fn sync(
    client: &Client,
    number: u64,
    key: &str,
    parts: &[String],
    quiet: bool,
) -> Result<Synced, GithubError> {
    let author = match client.login().await? {
        Some(login) => Author::Login(login),
        None => Author::AnyBot,
    };
    let comments = client.list_comments(number).await?;
    let existing = ours(&comments, key, &author);
    let mut done = Synced::default();
    for action in reconcile(&existing, parts.len(), quiet) {
        match action {
            Action::Update { id, part } => {
                let c = client.update_comment(id, &parts[part - 1]).await?;
                done.updated += 1;
                if part == 1 {
                    done.url = Some(c.html_url);
                }
            }
            Action::Create { part } => {
                let c = client.create_comment(number, &parts[part - 1]).await?;
                done.created += 1;
                if part == 1 {
                    done.url = Some(c.html_url);
                }
            }
            Action::Delete { id } => {
                client.delete_comment(id).await?;
                done.deleted += 1;
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::client::User;

    fn comment(id: u64, login: &str, kind: &str, body: &str) -> IssueComment {
        IssueComment {
            id,
            body: Some(body.into()),
            html_url: format!("https://github.com/a/b/pull/1#issuecomment-{id}"),
            user: Some(User {
                login: login.into(),
                kind: kind.into(),
            }),
        }
    }

    fn bot(id: u64, body: &str) -> IssueComment {
        comment(id, "github-actions[bot]", "Bot", body)
    }

    #[test]
    fn finds_parts_of_its_key_by_its_author_only() {
        let comments = [
            bot(1, "<!-- daemonsync-plan:default -->\n### daemonsync plan"),
            bot(2, "<!-- daemonsync-plan:prod -->\n### daemonsync plan"),
            bot(
                3,
                "<!-- daemonsync-plan:default -->\n<!-- daemonsync-plan-part:2 -->\nmore",
            ),
            // A person quoting or imitating the marker is never taken for ours.
            comment(
                4,
                "mallory",
                "User",
                "<!-- daemonsync-plan:default -->\nfake",
            ),
            bot(5, "LGTM <!-- daemonsync-plan:default -->"),
            bot(6, "<!-- daemonsync-plan:defaults -->\n"),
            bot(
                7,
                "<!-- daemonsync-plan:default --> **daemonsync plan: no changes.**",
            ),
        ];
        let found = ours(&comments, "default", &Author::AnyBot);
        assert_eq!(
            found,
            [
                Part { id: 1, part: 1 },
                Part { id: 3, part: 2 },
                Part { id: 7, part: 1 }
            ],
            "{found:?}"
        );
        let by_login = ours(&comments, "default", &Author::Login("mallory".into()));
        assert_eq!(by_login, [Part { id: 4, part: 1 }]);
    }

    #[test]
    fn one_line_comments_are_found_too() {
        let comments = [bot(9, "<!-- daemonsync-plan:default -->\n")];
        assert_eq!(
            ours(&comments, "default", &Author::AnyBot),
            [Part { id: 9, part: 1 }]
        );
    }

    #[test]
    fn first_run_creates_every_part() {
        assert_eq!(
            reconcile(&[], 2, false),
            [Action::Create { part: 1 }, Action::Create { part: 2 }]
        );
    }

    #[test]
    fn quiet_plan_creates_nothing_but_updates_an_existing_comment() {
        assert_eq!(reconcile(&[], 1, true), []);
        let existing = [Part { id: 5, part: 1 }, Part { id: 6, part: 2 }];
        assert_eq!(
            reconcile(&existing, 1, true),
            [Action::Update { id: 5, part: 1 }, Action::Delete { id: 6 }]
        );
    }

    #[test]
    fn surplus_parts_and_duplicates_are_deleted() {
        let existing = [
            Part { id: 30, part: 3 },
            Part { id: 10, part: 1 },
            Part { id: 20, part: 2 },
            Part { id: 11, part: 1 },
        ];
        assert_eq!(
            reconcile(&existing, 2, false),
            [
                Action::Update { id: 10, part: 1 },
                Action::Update { id: 20, part: 2 },
                Action::Delete { id: 11 },
                Action::Delete { id: 30 },
            ]
        );
    }
}
