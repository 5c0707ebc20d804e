//! compare (work in progress).
