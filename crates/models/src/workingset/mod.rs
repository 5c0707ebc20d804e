//! workingset model (work in progress).
