//! Where running code's output goes: a terminal, a captured buffer, or a Jupyter kernel's iopub.
use std::cell::RefCell;
use std::io::{BufRead, Write};

use crate::{DisplayData, Picture};

/// A sink for what running code prints and shows, and a source for `input()`.
pub trait Frontend {
    /// Text printed to standard output (`print`).
    fn stdout(&self, text: &str);
    /// Text printed to standard error (`eprint`).
    fn stderr(&self, text: &str);
    /// Rich output (`display(x)`); terminals print its plain text.
    fn display(&self, data: &DisplayData) {
        self.stdout(&format!("{}\n", data.plain));
    }
    /// A chart (`plot_memory()`): SVG in a notebook; terminals print its text.
    fn picture(&self, picture: &Picture) {
        self.stdout(&format!("{}\n", picture.plain));
    }
    /// Clear the output shown so far (notebooks); terminals ignore it.
    fn clear_output(&self, _wait: bool) {}
    /// Read one line for `input(prompt)`; `Err` says why no input can be had.
    fn input(&self, prompt: &str, password: bool) -> Result<String, String>;
}

/// Writes to the process's standard output and error, reads `input()` from standard input.
#[derive(Debug, Default)]
pub struct StdioFrontend;

impl Frontend for StdioFrontend {
    fn stdout(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
    fn stderr(&self, text: &str) {
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
    fn input(&self, prompt: &str, _password: bool) -> Result<String, String> {
        self.stdout(prompt);
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) => Err("input(): end of standard input".into()),
            Ok(_) => Ok(line.trim_end_matches(['\n', '\r']).to_string()),
            Err(e) => Err(format!("input(): cannot read standard input: {e}")),
        }
    }
}

/// One thing a session emitted, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputEvent {
    /// Standard output text.
    Stdout(String),
    /// Standard error text.
    Stderr(String),
    /// Rich display data.
    Display(DisplayData),
    /// A request to clear output.
    ClearOutput,
    /// A chart.
    Picture(Picture),
}

/// Keeps everything in memory: for tests and for callers that want output as a value.
#[derive(Debug, Default)]
pub struct CapturedOutput {
    events: RefCell<Vec<OutputEvent>>,
    inputs: RefCell<Vec<String>>,
}

impl CapturedOutput {
    /// A capture whose `input()` calls answer with `inputs`, in order.
    pub fn with_inputs(inputs: Vec<String>) -> Self {
        CapturedOutput {
            events: RefCell::default(),
            inputs: RefCell::new(inputs),
        }
    }
    /// Everything emitted so far.
    pub fn events(&self) -> Vec<OutputEvent> {
        self.events.borrow().clone()
    }
    /// All standard output text so far, concatenated.
    pub fn stdout_text(&self) -> String {
        self.events
            .borrow()
            .iter()
            .filter_map(|e| match e {
                OutputEvent::Stdout(s) => Some(s.as_str()),
                _ => None,
            })
            .collect()
    }
    /// All standard error text so far, concatenated.
    pub fn stderr_text(&self) -> String {
        self.events
            .borrow()
            .iter()
            .filter_map(|e| match e {
                OutputEvent::Stderr(s) => Some(s.as_str()),
                _ => None,
            })
            .collect()
    }
    /// Forget what was captured.
    pub fn clear(&self) {
        self.events.borrow_mut().clear();
    }
}

impl Frontend for CapturedOutput {
    fn stdout(&self, text: &str) {
        self.events
            .borrow_mut()
            .push(OutputEvent::Stdout(text.to_string()));
    }
    fn stderr(&self, text: &str) {
        self.events
            .borrow_mut()
            .push(OutputEvent::Stderr(text.to_string()));
    }
    fn display(&self, data: &DisplayData) {
        self.events
            .borrow_mut()
            .push(OutputEvent::Display(data.clone()));
    }
    fn picture(&self, picture: &Picture) {
        self.events
            .borrow_mut()
            .push(OutputEvent::Picture(picture.clone()));
    }
    fn clear_output(&self, _wait: bool) {
        self.events.borrow_mut().push(OutputEvent::ClearOutput);
    }
    fn input(&self, _prompt: &str, _password: bool) -> Result<String, String> {
        let mut inputs = self.inputs.borrow_mut();
        if inputs.is_empty() {
            Err("input(): no input is available here".into())
        } else {
            Ok(inputs.remove(0))
        }
    }
}
