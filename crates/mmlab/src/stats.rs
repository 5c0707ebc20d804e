//! stats (work in progress).
