//! What one execute_request runs on the interpreter thread: the cell (magics included), then its user_expressions.
use std::collections::HashMap;
use std::time::Duration;

use jupyter_protocol::{ErrorOutput, ExpressionResult};

use super::interpreter::Unanswered;
use super::iopub::Publisher;
use super::language::{Language, Ran};
use super::replies;
use torchlet_session::{Outcome, ScriptError};

/// What running a cell produced, besides what it already published.
pub struct ExecuteDone {
    /// Value and error of the cell.
    pub outcome: Outcome,
    /// The evaluated user_expressions.
    pub user_expressions: HashMap<String, ExpressionResult>,
    /// Text to show in the pager (`name?`), if the cell asked for help.
    pub page: Option<String>,
    /// The error's traceback as the language wrote it, if it writes its own.
    pub traceback: Option<Vec<String>>,
}

impl ExecuteDone {
    /// A cell the interpreter could not finish: torchlet crashed in it, or the thread is gone.
    pub fn unanswered(why: Unanswered) -> ExecuteDone {
        let message = match why {
            Unanswered::Crashed(what) => format!(
                "torchlet crashed while running this cell ({what}); please report it. \
                 The kernel is still running and earlier variables are kept."
            ),
            Unanswered::Stopped => {
                "the interpreter thread has stopped; restart the kernel (variables are lost)".into()
            }
        };
        ExecuteDone {
            outcome: Outcome {
                value: None,
                error: Some(ScriptError::unplaced("InternalError", message)),
                elapsed: Duration::ZERO,
            },
            user_expressions: HashMap::new(),
            page: None,
            traceback: None,
        }
    }

    /// The cell's error as an output, with the language's traceback or one written here.
    pub fn error_output(&self, count: usize) -> Option<ErrorOutput> {
        let error = self.outcome.error.as_ref()?;
        let mut output = replies::error_output(error, count);
        if let Some(lines) = &self.traceback {
            output.traceback = lines.clone();
        }
        Some(output)
    }
}

/// Run `code` as cell `In[count]`, then, if it succeeded, evaluate `expressions` for their
/// values alone.
pub fn run(
    language: &mut dyn Language,
    publisher: &Publisher,
    (code, count): (&str, usize),
    expressions: &HashMap<String, String>,
) -> ExecuteDone {
    let Ran {
        mut outcome,
        page,
        traceback,
    } = language.run_cell(code, count);
    if let Some(error) = outcome.error.as_mut().filter(|e| e.kind == "SystemExit") {
        // A notebook's kernel outlives its cells: exit() stops this cell only.
        error.message = "exit() stopped this cell; the kernel keeps running (the notebook's Kernel menu restarts or shuts it down)".into();
    }
    let mut user_expressions = HashMap::new();
    if outcome.error.is_none() && !expressions.is_empty() {
        // Expressions are evaluated for their value only: what they print is not part of the cell.
        let was_muted = publisher.set_muted(true);
        for (name, expression) in expressions {
            let result = language.evaluate(expression);
            user_expressions.insert(name.clone(), replies::expression_result(&result));
        }
        publisher.set_muted(was_muted);
    }
    ExecuteDone {
        outcome,
        user_expressions,
        page,
        traceback,
    }
}
