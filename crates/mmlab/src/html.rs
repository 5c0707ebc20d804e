//! html (work in progress).
