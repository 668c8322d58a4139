//! The disk quota of `serve --record DIR`: the bytes of the directory's
//! replay files (`*.brr`) and desync reports (`desync-*.json`), those
//! there at start included, stay under [`RecordConfig::quota`].
//!
//! When something does not fit, the oldest desync reports are deleted
//! first (a report is evidence of one desync; the recordings are the
//! rooms' history). When no report is left to delete, a new report is not
//! written, a running recording stops (its file is closed cleanly) and a
//! new room is not recorded. Each of these is a log line and counts in
//! `bitroom_record_quota_bites_total`.
//!
//! [`RecordConfig::quota`]: crate::RecordConfig::quota

use crate::monitor::Monitor;
use crate::recording::REPLAY_EXTENSION;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;
use tracing::{info, warn};

/// The quota of one record directory (shared by every room's recording
/// thread).
#[derive(Debug)]
pub(crate) struct Quota {
    limit: u64,
    monitor: Arc<Monitor>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    used: u64,
    /// Reports by age (modification time, then a sequence number for the
    /// ones written by this server): path and size.
    reports: BTreeMap<(SystemTime, u64), (PathBuf, u64)>,
    written: u64,
}

/// Whether a file of the record directory counts, and whether it is a
/// report.
fn kind(name: &str) -> Option<bool> {
    if name.starts_with("desync-") && name.ends_with(".json") {
        Some(true)
    } else if name.ends_with(&format!(".{REPLAY_EXTENSION}")) {
        Some(false)
    } else {
        None
    }
}

impl Quota {
    /// The quota of `dir`, counting the replays and reports already there.
    pub(crate) fn open(dir: &Path, limit: u64, monitor: Arc<Monitor>) -> Quota {
        let mut state = State::default();
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                let name = e.file_name();
                let Some(is_report) = name.to_str().and_then(kind) else {
                    continue;
                };
                let Ok(meta) = e.metadata() else { continue };
                if !meta.is_file() {
                    continue;
                }
                state.used += meta.len();
                if is_report {
                    let at = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    state.written += 1;
                    state
                        .reports
                        .insert((at, state.written), (e.path(), meta.len()));
                }
            }
        }
        info!(
            "record quota: {} of {} MiB used in {}",
            state.used >> 20,
            limit >> 20,
            dir.display()
        );
        Quota {
            limit,
            monitor,
            state: Mutex::new(state),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes counted now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u64 {
        self.lock().used
    }

    /// Deletes the oldest reports until `extra` more bytes fit; whether
    /// they do.
    fn make_room(&self, s: &mut State, extra: u64) -> bool {
        while s.used.saturating_add(extra) > self.limit {
            let Some((_, (path, len))) = s.reports.pop_first() else {
                return false;
            };
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    s.used = s.used.saturating_sub(len);
                    self.monitor.quota_bite();
                    warn!(
                        "record quota of {} bytes reached: deleted the oldest desync report {}",
                        self.limit,
                        path.display()
                    );
                }
                // Gone already (deleted by hand): it no longer counts.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    s.used = s.used.saturating_sub(len);
                }
                Err(e) => warn!("cannot delete {} for the record quota: {e}", path.display()),
            }
        }
        true
    }

    /// Whether a new room may start recording (the directory is under its
    /// quota, after deleting old reports if need be).
    pub(crate) fn may_record(&self, room: &str) -> bool {
        let mut s = self.lock();
        if self.make_room(&mut s, 1) {
            return true;
        }
        self.monitor.quota_bite();
        warn!(
            "record quota of {} bytes reached: room {room:?} is not recorded",
            self.limit
        );
        false
    }

    /// Counts `bytes` a recording wrote; `false` when they do not fit even
    /// with every report deleted: the recording must stop.
    pub(crate) fn charge(&self, bytes: u64, path: &Path) -> bool {
        let mut s = self.lock();
        let fits = self.make_room(&mut s, bytes);
        s.used = s.used.saturating_add(bytes);
        if !fits {
            self.monitor.quota_bite();
            warn!(
                "record quota of {} bytes reached: recording {} stops",
                self.limit,
                path.display()
            );
        }
        fits
    }

    /// Counts bytes written that must be kept whatever the quota says (a
    /// recording's last flush and end record).
    pub(crate) fn count(&self, bytes: u64) {
        let mut s = self.lock();
        s.used = s.used.saturating_add(bytes);
    }

    /// Makes room for a report of `bytes`; `false` (and a log line) when it
    /// cannot fit.
    pub(crate) fn admit_report(&self, bytes: u64) -> bool {
        let mut s = self.lock();
        if self.make_room(&mut s, bytes) {
            return true;
        }
        self.monitor.quota_bite();
        warn!(
            "record quota of {} bytes reached: a desync report of {bytes} bytes is not written",
            self.limit
        );
        false
    }

    /// Counts a report written to `path`.
    pub(crate) fn add_report(&self, path: PathBuf, bytes: u64) {
        let mut s = self.lock();
        s.used = s.used.saturating_add(bytes);
        s.written += 1;
        let key = (SystemTime::now(), s.written);
        s.reports.insert(key, (path, bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bitroom-quota-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn report(q: &Quota, d: &Path, name: &str, len: usize) -> bool {
        if !q.admit_report(len as u64) {
            return false;
        }
        let p = d.join(name);
        std::fs::write(&p, vec![b'x'; len]).unwrap();
        q.add_report(p, len as u64);
        true
    }

    #[test]
    fn the_oldest_reports_go_first_and_recording_stops_last() {
        let d = dir("order");
        std::fs::write(d.join("old.brr"), [0u8; 100]).unwrap();
        std::fs::write(d.join("desync-old.json"), [0u8; 50]).unwrap();
        std::fs::write(d.join("notes.txt"), [0u8; 5000]).unwrap();
        let monitor = Arc::new(Monitor::default());
        let q = Quota::open(&d, 400, monitor.clone());
        assert_eq!(
            q.used(),
            150,
            "replays and reports count, other files do not"
        );
        assert!(report(&q, &d, "desync-a.json", 100));
        assert!(report(&q, &d, "desync-b.json", 100));
        assert_eq!(q.used(), 350);
        // A third report: the oldest (there at start) goes.
        assert!(report(&q, &d, "desync-c.json", 100));
        assert!(!d.join("desync-old.json").exists());
        assert!(d.join("desync-a.json").exists());
        assert_eq!(q.used(), 400);
        // A recording's bytes: reports a and b go, then it still fits.
        assert!(q.charge(150, &d.join("old.brr")));
        assert!(!d.join("desync-a.json").exists() && !d.join("desync-b.json").exists());
        assert_eq!(q.used(), 350);
        // More than deleting every report frees: the recording stops.
        assert!(!q.charge(200, &d.join("old.brr")));
        assert_eq!(q.used(), 450);
        assert!(!d.join("desync-c.json").exists());
        assert!(!q.may_record("r"));
        assert!(!report(&q, &d, "desync-d.json", 10));
        assert!(
            d.join("notes.txt").exists(),
            "other files are never touched"
        );
        assert_eq!(monitor.snapshot().quota_bites, 7);
        let _ = std::fs::remove_dir_all(&d);
    }
}
