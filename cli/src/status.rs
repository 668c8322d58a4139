//! The live status line of long-running commands (`demo`, `bots`): a
//! spinner with the latest line on a terminal, plain lines otherwise.

use std::io::IsTerminal;
use std::time::Duration;

/// A status line on stderr.
#[derive(Debug)]
pub struct StatusLine {
    bar: Option<indicatif::ProgressBar>,
}

impl StatusLine {
    /// A spinner when stderr is a terminal.
    pub fn new() -> StatusLine {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        StatusLine { bar }
    }

    /// Shows `line` (replacing the previous one on a terminal).
    pub fn show(&mut self, line: &str) {
        match &self.bar {
            Some(b) => b.set_message(line.to_string()),
            None => eprintln!("{line}"),
        }
    }

    /// Stops the spinner, leaving the last line (or, with `clear`, removing it).
    pub fn finish(&mut self, clear: bool) {
        if let Some(b) = self.bar.take() {
            if clear {
                b.finish_and_clear();
            } else {
                b.finish();
            }
        }
    }
}

impl Default for StatusLine {
    fn default() -> StatusLine {
        StatusLine::new()
    }
}
