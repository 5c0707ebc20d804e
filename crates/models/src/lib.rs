//! models (work in progress).
