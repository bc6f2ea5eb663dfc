//! The Python kernel's language: cells run on torchlet's Python, printed text streamed to iopub.
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use serde_json::Value;

use super::iopub::Publisher;
use super::language::{Language, Ran};
use torchlet_python::{CellState, Python, PythonError};
use torchlet_session::python_magics::{complete_magic, split_magics, PythonMagics};
use torchlet_session::variables_panel::{self as panel, PanelEntry};
use torchlet_session::{
    Candidate, Completeness, Completion, CompletionKind, DisplayData, Outcome, ScriptError,
};

/// One Python interpreter whose `__main__` lives as long as the kernel, and the magics' switches.
pub struct PythonCells {
    python: Python,
    magics: PythonMagics,
    publisher: Publisher,
    /// The names the variables panel last listed, by `variablesReference - 1`: names, not
    /// values, so a tensor the panel showed is freed by `del` like any other.
    listed: RefCell<Vec<String>>,
}

impl PythonCells {
    /// `%%ledger`: run the rest of the cell keeping the per-line ledger, then show it (its lines
    /// numbered from the first line after `%%ledger`).
    fn run_with_ledger(&mut self, body: &str, count: usize) -> Ran {
        let name = format!("In[{count}]");
        let device = torchlet_session::current_device();
        let started = Instant::now();
        let (result, lines) = self
            .python
            .with_ledger(&name, device, || self.python.run_cell(body, &name));
        let elapsed = started.elapsed();
        let table = torchlet_session::ledger::table(&lines, body);
        match result {
            Ok(shown) => {
                if let Some(s) = shown {
                    self.display(&shown_data(s));
                }
                valued(Some(table), elapsed)
            }
            Err(error) => {
                self.display(&table);
                failed(&error, elapsed)
            }
        }
    }

    /// A new interpreter whose `print` and tracebacks go to `publisher` as they are written.
    pub fn new(publisher: Publisher) -> Result<PythonCells, String> {
        let python = Python::new()?;
        let streams = publisher.clone();
        let sink = Rc::new(move |is_err: bool, text: &str| streams.stream(is_err, text));
        python
            .capture_output(sink)
            .map_err(|e| format!("cannot route Python's output: {}", e.traceback))?;
        Ok(PythonCells {
            python,
            magics: PythonMagics::default(),
            publisher,
            listed: RefCell::default(),
        })
    }

    /// The interpreter, for its interrupter.
    pub fn python(&self) -> &Python {
        &self.python
    }
}

/// The name a cell asks help for, IPython's `name?` or `?name`, when that is the whole cell.
fn help_query(code: &str) -> Option<&str> {
    let asked = code.trim();
    let name = asked
        .strip_suffix('?')
        .or_else(|| asked.strip_prefix('?'))?
        .trim();
    let dotted = !name.is_empty()
        && name
            .split('.')
            .all(|part| part.chars().all(|c| c.is_alphanumeric() || c == '_') && !part.is_empty());
    dotted.then_some(name)
}

impl Language for PythonCells {
    fn run_cell(&mut self, code: &str, count: usize) -> Ran {
        if let Some(name) = help_query(code) {
            let text = self
                .python
                .inspect(name, name.len())
                .unwrap_or_else(|| format!("Object `{name}` not found."));
            let outcome = Outcome {
                value: None,
                error: None,
                elapsed: std::time::Duration::ZERO,
            };
            return Ran {
                outcome,
                page: Some(text),
                traceback: None,
            };
        }
        if let Some(body) = code.trim_start().strip_prefix("%%ledger") {
            let body = body.split_once('\n').map_or("", |(_, rest)| rest);
            return self.run_with_ledger(body, count);
        }
        let (magic_lines, code) = split_magics(code);
        let mut shown = None;
        for line in magic_lines {
            if let Some(earlier) = shown.take() {
                self.display(&earlier);
            }
            match self.magics.run(&self.python, line) {
                Ok(data) => shown = Some(data),
                Err(message) => return refused(message),
            }
        }
        if code.trim().is_empty() {
            return valued(shown, std::time::Duration::ZERO);
        }
        if let Some(earlier) = shown {
            self.display(&earlier);
        }
        let before = self.magics.before_input();
        let started = Instant::now();
        let result = self.python.run_cell(&code, &format!("In[{count}]"));
        let elapsed = started.elapsed();
        let after = self.magics.after_input(before, elapsed);
        for line in after.lines {
            self.publisher.stream(false, &format!("{line}\n"));
        }
        if let Some(picture) = after.picture {
            let (data, display_id) = super::replies::picture_media(&picture);
            self.publisher.output(jupyter_protocol::DisplayData {
                data,
                metadata: Default::default(),
                transient: Some(jupyter_protocol::Transient { display_id }),
            });
        }
        match result {
            Ok(shown) => valued(shown.map(shown_data), elapsed),
            Err(error) => failed(&error, elapsed),
        }
    }

    fn evaluate(&mut self, expression: &str) -> Outcome {
        self.run_cell(expression, 0).outcome
    }

    fn complete(&self, code: &str, cursor: usize) -> Completion {
        let line_start = code[..cursor].rfind('\n').map_or(0, |i| i + 1);
        if let Some(word) = code[line_start..cursor].strip_prefix('%') {
            if !word.contains(' ') {
                let items = complete_magic(word).into_iter().map(|text| Candidate {
                    text,
                    kind: CompletionKind::Keyword,
                    signature: None,
                });
                return Completion {
                    start: line_start,
                    end: cursor,
                    items: items.collect(),
                };
            }
        }
        let found = self.python.complete(code, cursor);
        let kind = if code[..found.start].ends_with('.') {
            CompletionKind::Property
        } else {
            CompletionKind::Variable
        };
        let items = found.names.into_iter().map(|text| Candidate {
            text,
            kind,
            signature: None,
        });
        Completion {
            start: found.start,
            end: found.end,
            items: items.collect(),
        }
    }

    fn inspect(&self, code: &str, cursor: usize) -> Option<String> {
        self.python.inspect(code, cursor)
    }

    fn is_complete(&self, code: &str) -> Completeness {
        match self.python.cell_state(code) {
            CellState::Complete => Completeness::Complete,
            CellState::Incomplete => Completeness::Incomplete,
            CellState::Invalid => Completeness::Invalid,
        }
    }

    fn variables(&self, command: &str, arguments: &Value) -> Result<Value, String> {
        match command {
            "inspectVariables" => {
                let entries = self.panel_entries();
                let answer = panel::inspect_entries(&entries);
                *self.listed.borrow_mut() = entries.into_iter().map(|(name, _)| name).collect();
                Ok(answer)
            }
            "variables" => {
                let reference = arguments["variablesReference"]
                    .as_i64()
                    .ok_or("variables needs a variablesReference")?;
                let listed = self.listed.borrow();
                let name = usize::try_from(reference - 1)
                    .ok()
                    .and_then(|i| listed.get(i));
                let entries = self.panel_entries();
                let entry = name.and_then(|name| entries.iter().find(|(n, _)| n == name));
                match entry {
                    Some((_, PanelEntry::Tensor(t))) => Ok(panel::tensor_fields(t)),
                    _ => Err(format!("no tensor has variablesReference {reference}")),
                }
            }
            "richInspectVariables" => {
                let name = arguments["variableName"]
                    .as_str()
                    .ok_or("richInspectVariables needs a variableName")?;
                let entries = self.panel_entries();
                let entry = entries.iter().find(|(n, _)| n == name).map(|(_, e)| e);
                let entry = entry.ok_or_else(|| format!("name '{name}' is not defined"))?;
                Ok(panel::rich_entry(name, entry))
            }
            _ => Err(format!("{command} is not a variables request")),
        }
    }
}

impl PythonCells {
    /// What the variables panel lists: every variable, each followed by the tensors reached
    /// through it, by path (`model.fc.weight`).
    fn panel_entries(&self) -> Vec<(String, PanelEntry)> {
        let walked = self.python.named_values();
        let mut entries: Vec<(String, PanelEntry)> = walked
            .tensor_paths()
            .into_iter()
            .map(|(path, t)| (path, PanelEntry::Tensor(t)))
            .collect();
        for [name, kind, text] in self.python.other_variables() {
            entries.push((name, PanelEntry::Other { text, kind }));
        }
        let root = |path: &str| path.split(['.', '[']).next().unwrap_or(path).to_string();
        // A variable first, then the tensors reached through it.
        entries.sort_by_key(|(path, _)| (root(path), root(path) != *path));
        entries
    }

    fn display(&self, data: &DisplayData) {
        self.publisher.output(jupyter_protocol::DisplayData {
            data: super::replies::media(data),
            metadata: Default::default(),
            transient: None,
        });
    }
}

/// A cell that ran to its end, with the value it shows (if any).
fn valued(value: Option<DisplayData>, elapsed: std::time::Duration) -> Ran {
    Ran {
        outcome: Outcome {
            value,
            error: None,
            elapsed,
        },
        page: None,
        traceback: None,
    }
}

/// A cell that raised `error`, with CPython's traceback.
fn failed(error: &PythonError, elapsed: std::time::Duration) -> Ran {
    Ran {
        traceback: Some(traceback_lines(error)),
        outcome: Outcome {
            value: None,
            error: Some(ScriptError::unplaced(&error.kind, error.message.clone())),
            elapsed,
        },
        page: None,
    }
}

/// A cell's value as the notebook shows it: its `repr`, and its HTML when it has one.
fn shown_data(shown: torchlet_python::Shown) -> DisplayData {
    DisplayData {
        plain: shown.plain,
        html: shown.html,
    }
}

/// A magic's refusal (`UsageError: …`, `NameError: …`) as the cell's error.
fn refused(message: String) -> Ran {
    let (kind, text) = message.split_once(": ").unwrap_or(("UsageError", &message));
    Ran {
        traceback: Some(vec![format!("\x1b[0;31m{kind}\x1b[0m: {text}")]),
        outcome: Outcome {
            value: None,
            error: Some(ScriptError::unplaced(kind, text.to_string())),
            elapsed: std::time::Duration::ZERO,
        },
        page: None,
    }
}

/// CPython's traceback, one line per output line, with the error's own line in red as
/// IPython colours it.
fn traceback_lines(error: &PythonError) -> Vec<String> {
    let mut lines: Vec<String> = error.traceback.lines().map(str::to_string).collect();
    if let Some(last) = lines.last_mut() {
        *last = format!("\x1b[0;31m{last}\x1b[0m");
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::help_query;

    #[test]
    fn help_is_asked_with_a_question_mark_before_or_after_a_dotted_name() {
        assert_eq!(help_query("torch.zeros?"), Some("torch.zeros"));
        assert_eq!(help_query("?x\n"), Some("x"));
        assert_eq!(help_query("x = 1?"), None);
        assert_eq!(help_query("?"), None);
        assert_eq!(help_query("a..b?"), None);
    }
}
