//! hierstat (work in progress).
