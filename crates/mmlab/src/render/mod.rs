//! Output: text in the seeds' formats, JSON, the self-contained HTML
//! report, the store's history listings, and [`write_atomic`], the one way
//! a file is written.

pub mod history;
pub mod html;
pub mod json;
pub mod text;

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` through a temporary file (`PATH.tmp`) renamed
/// into place, so a failure leaves nothing half written.
///
/// # Errors
/// The temporary file cannot be written or renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = PathBuf::from(path.as_os_str());
    tmp.as_mut_os_string().push(".tmp");
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_leaves_only_the_file() {
        let dir = std::env::temp_dir().join(format!("mmlab-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out.json");
        write_atomic(&p, b"{}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{}");
        assert!(!dir.join("out.json.tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
