//! What one session's language keeps between and during statements, owned by that session.
//!
//! The engine's hooks (`__site`, `__line`, `__iteration`, `__with_globals`, `arg`, `empty_cache`)
//! each hold the session's [`State`], so two sessions in one thread never see each other's
//! statement names, ledger, loops or arguments.
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use torchlet_explain::leaks::LeakWatch;
use torchlet_explain::ledger::Ledger;

use super::globals::Mirror;
use super::provenance::Input;

/// One session's language state; see [`State`].
#[derive(Default)]
pub struct LanguageState {
    /// The inputs run so far and the one running now, whose statements name the allocations
    /// they make.
    pub(crate) input: RefCell<Input>,
    /// The loops of the input running now, watched for growth.
    pub(crate) leaks: RefCell<LeakWatch>,
    /// The per-line ledger, while one is kept.
    pub(crate) ledger: RefCell<Option<Ledger>>,
    /// The script's arguments, as `arg(name, default)` reads them.
    pub(crate) args: RefCell<Vec<String>>,
    /// The top-level bindings a running script function sees as globals.
    pub(crate) mirror: RefCell<Mirror>,
    /// Whether `empty_cache()` ran since the session last asked.
    pub(crate) empty_cache_called: Cell<bool>,
}

/// The state shared by a session and the hooks of its engine.
pub type State = Rc<LanguageState>;

impl LanguageState {
    /// Forget the loops of the previous input.
    pub fn reset_leaks(&self) {
        self.leaks.borrow_mut().clear();
    }

    /// Set the arguments `arg()` reads (the runner sets `ARGS` too).
    pub fn set_args(&self, args: &[String]) {
        *self.args.borrow_mut() = args.to_vec();
    }

    /// Whether `empty_cache()` ran since the last call (the trace then says what it could not free).
    pub fn take_empty_cache_called(&self) -> bool {
        self.empty_cache_called.replace(false)
    }

    /// Start keeping the ledger of cuda:`device` (replacing any other).
    pub fn start_ledger(&self, device: usize) {
        *self.ledger.borrow_mut() = Some(Ledger::start(device));
    }

    /// Stop keeping the ledger and hand over its lines.
    pub fn finish_ledger(
        &self,
    ) -> std::collections::BTreeMap<usize, torchlet_explain::ledger::LineStats> {
        self.ledger.borrow_mut().take().unwrap_or_default().finish()
    }
}
