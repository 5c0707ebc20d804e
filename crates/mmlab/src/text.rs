//! text (work in progress).
