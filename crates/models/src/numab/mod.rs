//! numab model (work in progress).
