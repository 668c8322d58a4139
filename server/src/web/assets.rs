//! The page's files: the ones in the assets folder when the server
//! started, listed once, served by exact name. A request can only name one
//! of them, so nothing outside the folder (`..`, links, later additions)
//! is reachable. `NAME.gz` beside a file is sent instead to browsers that
//! take gzip (the wasm module: a third of the bytes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest file served.
pub(crate) const MAX_ASSET: u64 = 32 << 20;

/// The files of the page, by name.
#[derive(Debug, Default)]
pub(crate) struct Assets {
    files: BTreeMap<String, PathBuf>,
}

/// One file to send.
#[derive(Debug)]
pub(crate) struct Asset {
    pub(crate) bytes: Vec<u8>,
    pub(crate) content_type: &'static str,
    pub(crate) gzip: bool,
}

/// The content type of a served file, by extension; files of other kinds
/// are not served.
fn content_type(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.').map(|(_, e)| e)?;
    Some(match ext {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" => "application/json",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        _ => return None,
    })
}

fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

impl Assets {
    /// Lists the regular files of `dir` with plain names (letters, digits,
    /// `.`, `-`, `_`) of the kinds served, or `.gz` of them.
    ///
    /// # Errors
    /// The folder cannot be read, or has no `index.html`.
    pub(crate) fn scan(dir: &Path) -> Result<Assets, String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut files = BTreeMap::new();
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let kind = content_type(name.strip_suffix(".gz").unwrap_or(&name));
            // Not followed through links: `file_type` is the entry's own.
            let regular = entry.file_type().is_ok_and(|t| t.is_file());
            if plain_name(&name) && kind.is_some() && regular {
                files.insert(name, entry.path());
            }
        }
        if !files.contains_key("index.html") {
            return Err(format!("{}: no index.html", dir.display()));
        }
        Ok(Assets { files })
    }

    /// Whether a file of that name is served.
    #[cfg(test)]
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.files.contains_key(name)
    }

    /// Reads the file `name` (its `.gz` when `gzip_ok` and there is one).
    /// `None`: no such file, or it cannot be read now.
    pub(crate) fn read(&self, name: &str, gzip_ok: bool) -> Option<Asset> {
        let content_type = content_type(name)?;
        let gz = format!("{name}.gz");
        let (path, gzip) = match self.files.get(&gz) {
            Some(p) if gzip_ok && self.files.contains_key(name) => (p, true),
            _ => (self.files.get(name)?, false),
        };
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() || meta.len() > MAX_ASSET {
            return None;
        }
        let bytes = std::fs::read(path).ok()?;
        Some(Asset {
            bytes,
            content_type,
            gzip,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_plain_files_are_served() {
        let root = std::env::temp_dir().join(format!("bitroom-assets-{}", std::process::id()));
        let dir = root.join("dist");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("index.html"), b"<html>").unwrap();
        std::fs::write(dir.join("app.js"), b"js").unwrap();
        std::fs::write(dir.join("app.js.gz"), b"gz").unwrap();
        std::fs::write(dir.join(".secret.js"), b"no").unwrap();
        std::fs::write(dir.join("notes.md"), b"no").unwrap();
        std::fs::write(root.join("outside.js"), b"no").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("outside.js"), dir.join("link.js")).unwrap();
        let assets = Assets::scan(&dir).unwrap();
        assert!(assets.contains("index.html") && assets.contains("app.js"));
        for bad in [
            "../outside.js",
            ".secret.js",
            "notes.md",
            "link.js",
            "",
            "dist/app.js",
        ] {
            assert!(assets.read(bad, false).is_none(), "{bad}");
        }
        let js = assets.read("app.js", false).unwrap();
        assert_eq!((js.bytes.as_slice(), js.gzip), (&b"js"[..], false));
        let gz = assets.read("app.js", true).unwrap();
        assert_eq!((gz.bytes.as_slice(), gz.gzip), (&b"gz"[..], true));
        assert_eq!(gz.content_type, "text/javascript; charset=utf-8");
        std::fs::remove_file(dir.join("index.html")).unwrap();
        assert!(Assets::scan(&dir).unwrap_err().contains("no index.html"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
