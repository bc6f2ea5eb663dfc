//! The kernel's in-memory input history, answering history_request's tail, range and search.
use jupyter_protocol::{HistoryEntry, HistoryRequest};

/// One executed cell: its number, its source and the text of its result.
#[derive(Clone, Debug, PartialEq)]
struct Cell {
    line: usize,
    input: String,
    output: String,
}

/// The cells run with `store_history` in this kernel's life (session number 0 is "this session").
#[derive(Debug, Default)]
pub struct History {
    cells: Vec<Cell>,
}

/// The session number this kernel reports (IPython numbers the current session by 1-based id;
/// torchlet keeps one session per kernel process, and 0 means "current" in range requests).
const SESSION: usize = 1;

impl History {
    /// Record cell `line` and the text/plain of what it produced ("" if nothing).
    pub fn record(&mut self, line: usize, input: &str, output: &str) {
        self.cells.push(Cell {
            line,
            input: input.to_string(),
            output: output.to_string(),
        });
    }

    /// Answer a history_request.
    pub fn query(&self, request: &HistoryRequest) -> Vec<HistoryEntry> {
        match request {
            HistoryRequest::Tail { n, output, .. } => {
                let n = (*n).max(0) as usize;
                let skip = self.cells.len().saturating_sub(n);
                entries(self.cells.iter().skip(skip), *output)
            }
            HistoryRequest::Range {
                session,
                start,
                stop,
                output,
                ..
            } => {
                // Only this session's cells exist; negative session numbers count back from it.
                if !matches!(session, None | Some(0) | Some(-1)) && *session != Some(SESSION as i32)
                {
                    return Vec::new();
                }
                let (start, stop) = (*start as i64, *stop as i64);
                let picked = self.cells.iter().filter(|c| {
                    let l = c.line as i64;
                    l >= start && (stop <= 0 || l < stop)
                });
                entries(picked, *output)
            }
            HistoryRequest::Search {
                pattern,
                unique,
                output,
                n,
                ..
            } => {
                let mut found: Vec<&Cell> = Vec::new();
                for cell in self.cells.iter().rev() {
                    if !glob_match(pattern, &cell.input) {
                        continue;
                    }
                    if *unique && found.iter().any(|c| c.input == cell.input) {
                        continue;
                    }
                    found.push(cell);
                }
                if *n > 0 {
                    found.truncate(*n as usize);
                }
                found.reverse();
                entries(found.into_iter(), *output)
            }
        }
    }
}

fn entries<'a>(cells: impl Iterator<Item = &'a Cell>, output: bool) -> Vec<HistoryEntry> {
    cells
        .map(|c| {
            if output {
                HistoryEntry::InputOutput(SESSION, c.line, (c.input.clone(), c.output.clone()))
            } else {
                HistoryEntry::Input(SESSION, c.line, c.input.clone())
            }
        })
        .collect()
}

/// Shell-style glob as IPython's history search uses: `*` any run, `?` one character.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> History {
        let mut h = History::default();
        h.record(1, "let a = 1;", "");
        h.record(2, "a + 1", "2");
        h.record(3, "a + 1", "2");
        h.record(4, "print(a)", "");
        h
    }

    fn lines(entries: &[HistoryEntry]) -> Vec<usize> {
        entries
            .iter()
            .map(|e| match e {
                HistoryEntry::Input(_, l, _) | HistoryEntry::InputOutput(_, l, _) => *l,
            })
            .collect()
    }

    #[test]
    fn tail_gives_the_last_n_with_outputs() {
        let h = sample();
        let r = h.query(&HistoryRequest::Tail {
            n: 2,
            output: true,
            raw: true,
        });
        assert_eq!(lines(&r), vec![3, 4]);
        assert!(
            matches!(&r[0], HistoryEntry::InputOutput(_, 3, (i, o)) if i == "a + 1" && o == "2")
        );
    }

    #[test]
    fn range_is_half_open() {
        let h = sample();
        let r = h.query(&HistoryRequest::Range {
            session: Some(0),
            start: 2,
            stop: 3,
            output: false,
            raw: true,
        });
        assert_eq!(lines(&r), vec![2]);
    }

    #[test]
    fn search_globs_dedups_and_limits() {
        let h = sample();
        let search = |unique, n| {
            lines(&h.query(&HistoryRequest::Search {
                pattern: "a*1".into(),
                unique,
                output: false,
                raw: true,
                n,
            }))
        };
        assert_eq!(search(false, 0), vec![2, 3]);
        assert_eq!(search(true, 0), vec![3]);
        assert_eq!(search(false, 1), vec![3]);
        assert!(glob_match("*", ""));
        assert!(glob_match("pr?nt(*)", "print(a)"));
        assert!(!glob_match("a*2", "a + 1"));
    }
}
