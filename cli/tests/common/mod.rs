//! What the command-line tests share.

use std::process::Output;

/// Exit code 2 and a single `error:` line on stderr that names `needle`.
pub fn assert_bad_input(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected: {stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    assert!(lines[0].contains(needle), "{needle:?} not in {stderr}");
}
