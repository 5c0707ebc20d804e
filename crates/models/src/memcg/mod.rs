//! memcg model (work in progress).
