//! Why memory is or is not freed, over a language-neutral view of named values: who holds each
//! block, what each way of freeing would do, leaks, the per-line ledger, the timeline and its
//! picture, and snapshots for PyTorch's memory viewer.
//!
//! Map: `value` (the view a language hands in: [`Value`]), `holders` (what keeps each live block
//! alive), `explain_free` (the article's four ways, worked out on a snapshot), `leaks` (loops that
//! grow), `ledger` (per-line memory), `memory_timeline` and `memory_plot` (the session's memory
//! over time, drawn), `snapshot_dump` (the viewer's JSON or pickle), `statement_names` and
//! `site_name` (reading the allocator's statement sites back as frames and variables), `display`
//! and `picture` (what front ends show), `bytes` (sizes as people read them).
//! Below it sit `torchlet_core` and `torchlet_alloc`; nothing here knows a language.

pub mod bytes;
pub mod display;
pub mod explain_free;
pub mod holders;
pub mod leaks;
pub mod ledger;
pub mod memory_plot;
pub mod memory_timeline;
pub mod picture;
pub mod site_name;
pub mod snapshot_dump;
pub mod statement_names;
pub mod value;

pub use display::DisplayData;
pub use picture::Picture;
pub use value::Value;
