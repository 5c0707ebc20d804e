//! Progress of long work on stderr: a bar on a terminal, plain
//! `label: k/n step` lines (at most one a second, and the last) when stderr
//! is a pipe or a file. The one progress display of every command.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lab::Progress;
use std::io::IsTerminal;
use std::time::Instant;

/// A progress display for one piece of work named `label`.
#[derive(Debug)]
pub struct Reporter {
    label: String,
    bar: ProgressBar,
    tty: bool,
    done: u64,
    total: u64,
    last_line: Instant,
}

impl Reporter {
    /// A display for `label`; nothing shows until [`Reporter::total`]
    /// (a bar's first frame is never `0/0`).
    pub fn new(label: &str) -> Reporter {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{prefix:>18} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        Reporter {
            label: label.to_string(),
            bar,
            tty: std::io::stderr().is_terminal(),
            done: 0,
            total: 0,
            last_line: Instant::now(),
        }
    }

    /// The work has `n` steps: the bar appears (terminal) or a `0/n
    /// started` line is printed.
    pub fn total(&mut self, n: u64) {
        self.total = n;
        self.bar.set_length(n);
        if self.tty {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        } else {
            eprintln!("{}: 0/{n} started", self.label);
        }
    }

    /// One step is done; `what` says which.
    pub fn step(&mut self, what: &str) {
        self.done += 1;
        self.bar.set_message(what.to_string());
        self.bar.inc(1);
        if !self.tty && (self.last_line.elapsed().as_secs() >= 1 || self.done == self.total) {
            self.last_line = Instant::now();
            eprintln!("{}: {}/{} {what}", self.label, self.done, self.total);
        }
    }

    /// Takes a scenario run's progress notification.
    pub fn observe(&mut self, p: Progress) {
        match p {
            Progress::Total(n) => self.total(n),
            Progress::Step(s) => self.step(&s),
        }
    }

    /// Clears the bar.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
