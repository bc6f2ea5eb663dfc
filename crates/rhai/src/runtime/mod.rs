//! How statements run: CPython's lifetimes, `del`, the grad-mode and autocast blocks, globals,
//! statement names, leak watches, and the session's language state.
//!
//! Map: `lifetimes` (the rewrite that drops temporaries when CPython would, and marks lines and
//! loops), `syntax` (the grad-mode blocks and the variable hook), `del`, `autocast_block`,
//! `globals` (top-level names inside script functions), `provenance` (`__site`: each statement
//! names the allocations it makes), `leaks` (`__iteration`: loops that grow), `state` (what these
//! hooks keep for one session), `frontend` (where output goes), `interrupt` (the stop flag).

pub mod autocast_block;
pub mod del;
pub mod frontend;
pub mod globals;
pub mod interrupt;
pub mod leaks;
pub mod lifetimes;
pub mod provenance;
pub mod state;
pub mod syntax;
