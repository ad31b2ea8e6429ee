//! Renderings of a plan.
