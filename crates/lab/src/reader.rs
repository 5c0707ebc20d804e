//! How a `memory.stat` reader of a stats scenario reads ([`ReadMode`]):
//! the policy's own threshold-guarded flush, a forced flush of the group's
//! subtree, no flush at all, or within a tolerance
//! ([`hierstat::HierStats::read_within`]). Set per scenario
//! (`[readers] tolerance`, the `stats` kind) or per policy (the
//! `read_tolerance` knob of a `[[policy]]` table, which a sweep can vary).
//! The `refault` kind's refaults read the eviction lruvec's sizes the same
//! ways, per policy (`guarded` there is the policy's hot-path flush).
//!
//! Text forms: `guarded`, `forced`, `clean`, a relative tolerance `1%` (any decimal
//! percentage: `0.1%`, `10%`; `0%` or `0` is exact), an absolute one in
//! pages (`64`), or both, the larger budget winning (`1%+64`).

use hierstat::Tolerance;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// How a reader reads (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ReadMode {
    /// The policy's threshold-guarded read flush, then a plain read (what
    /// each era's `memory.stat` does).
    #[default]
    Guarded,
    /// A forced flush of the group's subtree
    /// ([`hierstat::HierStats::flush_forced`]), then a plain read: an exact
    /// read that pays for it every time (the cost a tolerance read saves).
    Forced,
    /// No flush at all: the aggregates as the last flush left them, with
    /// their bound.
    Clean,
    /// `read_within`: the bound fits `ppm` millionths of each value or
    /// `pages`, whichever is larger; only what could break it is flushed.
    Within {
        /// Relative budget, in millionths of the value (10,000 is 1%).
        ppm: u32,
        /// Absolute budget, in pages.
        pages: u64,
    },
}

impl ReadMode {
    /// The engine's tolerance for an item in pages, under
    /// [`ReadMode::Within`].
    pub fn tolerance(self) -> Option<Tolerance> {
        match self {
            ReadMode::Within { ppm, pages } => Some(Tolerance::Either {
                relative: f64::from(ppm) / 1e6,
                absolute: pages,
            }),
            _ => None,
        }
    }

    /// Whether this is the default, [`ReadMode::Guarded`] (a scenario
    /// file leaves it out).
    pub fn is_guarded(&self) -> bool {
        *self == ReadMode::Guarded
    }
}

impl fmt::Display for ReadMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ReadMode::Guarded => f.write_str("guarded"),
            ReadMode::Forced => f.write_str("forced"),
            ReadMode::Clean => f.write_str("clean"),
            ReadMode::Within { ppm, pages } => {
                let pct = f64::from(ppm) / 1e4;
                match (ppm, pages) {
                    (0, p) => write!(f, "{p}"),
                    (_, 0) => write!(f, "{pct}%"),
                    (_, p) => write!(f, "{pct}%+{p}"),
                }
            }
        }
    }
}

impl FromStr for ReadMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "`{s}` is not a read mode (guarded, clean, a percentage such as 1%, \
                 pages such as 64, or both: 1%+64; `forced` flushes every read)"
            )
        };
        match s.trim() {
            "guarded" => return Ok(ReadMode::Guarded),
            "forced" => return Ok(ReadMode::Forced),
            "clean" => return Ok(ReadMode::Clean),
            _ => {}
        }
        let (rel, abs) = match s.trim().split_once('+') {
            Some((r, a)) => (Some(r.trim()), Some(a.trim())),
            None if s.trim().ends_with('%') => (Some(s.trim()), None),
            None => (None, Some(s.trim())),
        };
        let ppm = match rel {
            None => 0,
            Some(r) => {
                let pct: f64 = r
                    .strip_suffix('%')
                    .ok_or_else(bad)?
                    .trim()
                    .parse()
                    .map_err(|_| bad())?;
                if !(0.0..=100.0).contains(&pct) {
                    return Err(format!("`{s}`: a percentage from 0% to 100%"));
                }
                let ppm = (pct * 1e4).round() as u32;
                // A budget finer than a millionth would silently become an
                // exact read.
                if ppm == 0 && pct > 0.0 {
                    return Err(format!("`{s}`: the finest percentage is 0.0001%"));
                }
                ppm
            }
        };
        let pages = match abs {
            None => 0,
            Some(a) => a.parse::<u64>().map_err(|_| bad())?,
        };
        Ok(ReadMode::Within { ppm, pages })
    }
}

impl Serialize for ReadMode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ReadMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip() {
        for (text, mode) in [
            ("guarded", ReadMode::Guarded),
            ("clean", ReadMode::Clean),
            ("forced", ReadMode::Forced),
            ("0", ReadMode::Within { ppm: 0, pages: 0 }),
            ("0.0001%", ReadMode::Within { ppm: 1, pages: 0 }),
            (
                "0.1%",
                ReadMode::Within {
                    ppm: 1_000,
                    pages: 0,
                },
            ),
            (
                "1%",
                ReadMode::Within {
                    ppm: 10_000,
                    pages: 0,
                },
            ),
            (
                "10%",
                ReadMode::Within {
                    ppm: 100_000,
                    pages: 0,
                },
            ),
            ("64", ReadMode::Within { ppm: 0, pages: 64 }),
            (
                "1%+64",
                ReadMode::Within {
                    ppm: 10_000,
                    pages: 64,
                },
            ),
        ] {
            assert_eq!(text.parse::<ReadMode>().unwrap(), mode, "{text}");
            assert_eq!(mode.to_string().parse::<ReadMode>().unwrap(), mode);
        }
        assert_eq!("1%".parse::<ReadMode>().unwrap().to_string(), "1%");
        assert_eq!("0%".parse::<ReadMode>().unwrap(), "0".parse().unwrap());
        assert_eq!(
            " 1% + 64 ".parse::<ReadMode>().unwrap().to_string(),
            "1%+64"
        );
        assert!(ReadMode::default().is_guarded() && !ReadMode::Clean.is_guarded());
        for bad in [
            "", "%", "often", "-1%", "101%", "1%+x", "x+1", "1%+", "+64", "-1", "NaN%", "inf%",
            "0.00001%", "1%%", "Forced",
        ] {
            assert!(bad.parse::<ReadMode>().is_err(), "{bad}");
        }
        assert_eq!(
            "1%+64".parse::<ReadMode>().unwrap().tolerance(),
            Some(Tolerance::Either {
                relative: 0.01,
                absolute: 64
            })
        );
    }
}
