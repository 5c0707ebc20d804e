//! Fixtures shared by the integration tests.

// Each test binary uses its own part of the fixtures.
#![allow(dead_code)]

pub mod sample;
