//! Keeping the last good render in effect when a source fails.
//!
//! A source that fails (unreachable, authentication refused, ref missing, empty render) must
//! never turn into "desired state is empty". [`Tracked`] holds the last good [`Rendered`] and
//! reports a failure alongside it, so a long-running caller keeps reconciling towards the last
//! good commit and surfaces the error.
//!
//! History that was rewritten (a force-push: the new commit does not descend from the last
//! good one) is treated the same way unless [`Tracked::allow_history_rewrites`] is set: a
//! platform team wants to look at that before the cluster follows it.

use super::{Rendered, Source, SourceError};
use crate::manifest::LoadOptions;

/// A source and its last good render.
#[derive(Debug)]
pub struct Tracked<S> {
    source: S,
    last_good: Option<Rendered>,
    /// Follow force-pushed history without complaint.
    pub allow_history_rewrites: bool,
}

/// The outcome of [`Tracked::refresh`].
#[derive(Debug)]
pub enum Refresh<'a> {
    /// A new revision was rendered and is now in effect.
    Updated(&'a Rendered),
    /// The same revision as before.
    Unchanged(&'a Rendered),
    /// The source failed; `in_effect` is the last good render (if there ever was one).
    Failed {
        /// Why.
        error: SourceError,
        /// What stays in effect.
        in_effect: Option<&'a Rendered>,
    },
}

impl<S: Source> Tracked<S> {
    /// Wraps a source; nothing is in effect until the first successful refresh.
    pub fn new(source: S) -> Self {
        Tracked {
            source,
            last_good: None,
            allow_history_rewrites: false,
        }
    }

    /// The source followed.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The render in effect.
    pub fn in_effect(&self) -> Option<&Rendered> {
        self.last_good.as_ref()
    }

    /// Reads the source again. On failure, the previous render stays in effect.
    pub fn refresh(&mut self, opts: &LoadOptions) -> Refresh<'_> {
        match self.source.load(opts) {
            Ok(r) => {
                if let Some(old) = &self.last_good
                    && !self.allow_history_rewrites
                {
                    match self.source.descends_from(&r.revision, &old.revision) {
                        Ok(Some(false)) => {
                            return Refresh::Failed {
                                error: SourceError::HistoryRewritten {
                                    source_name: self.source.describe(),
                                    old: old.revision.clone(),
                                    new: r.revision,
                                },
                                in_effect: self.last_good.as_ref(),
                            };
                        }
                        Ok(_) => {}
                        Err(error) => {
                            return Refresh::Failed {
                                error,
                                in_effect: self.last_good.as_ref(),
                            };
                        }
                    }
                }
                let same = self
                    .last_good
                    .as_ref()
                    .is_some_and(|old| old.revision == r.revision);
                if same {
                    Refresh::Unchanged(self.last_good.as_ref().expect("checked"))
                } else {
                    Refresh::Updated(self.last_good.insert(r))
                }
            }
            Err(error) => Refresh::Failed {
                error,
                in_effect: self.last_good.as_ref(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    struct Scripted(RefCell<Vec<Result<Rendered, SourceError>>>);

    impl Source for Scripted {
        fn describe(&self) -> String {
            "scripted".into()
        }
        fn load(&self, _: &LoadOptions) -> Result<Rendered, SourceError> {
            self.0.borrow_mut().remove(0)
        }
    }

    fn rendered(rev: &str) -> Rendered {
        Rendered {
            revision: rev.into(),
            manifests: Default::default(),
            files: 1,
            notes: vec![],
            rendered_by: vec![],
        }
    }

    #[test]
    fn failure_keeps_last_good() {
        let script = vec![
            Ok(rendered("a")),
            Err(SourceError::Fetch {
                url: "u".into(),
                message: "unreachable".into(),
            }),
            Err(SourceError::Empty {
                what: "no DaemonSet".into(),
                source_name: "u".into(),
            }),
            Ok(rendered("a")),
            Ok(rendered("b")),
        ];
        let mut t = Tracked::new(Scripted(RefCell::new(script)));
        let opts = LoadOptions::default();
        assert!(matches!(t.refresh(&opts), Refresh::Updated(r) if r.revision == "a"));
        assert!(
            matches!(t.refresh(&opts), Refresh::Failed { in_effect: Some(r), .. } if r.revision == "a")
        );
        assert!(
            matches!(t.refresh(&opts), Refresh::Failed { in_effect: Some(r), .. } if r.revision == "a")
        );
        assert!(matches!(t.refresh(&opts), Refresh::Unchanged(_)));
        assert!(matches!(t.refresh(&opts), Refresh::Updated(r) if r.revision == "b"));
        assert_eq!(t.in_effect().unwrap().revision, "b");
    }
}
