//! Serialises a `Duration` as a number of milliseconds (fractions allowed),
//! so configurations read naturally in scenario files: `period = 1.0`.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let ms = f64::deserialize(d)?;
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(serde::de::Error::custom(format!(
            "a duration in ms must be finite and >= 0, got {ms}"
        )));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}
