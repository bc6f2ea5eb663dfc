//! Reading the source before Rhai does: the lexer, PyTorch's spellings, Python's scoping, and hints.
//!
//! Map: `tokens` (the one lexer: names, numbers, strings, comments, symbols, with spans and lines),
//! `python_spelling` (PyTorch's and Python's spellings read as torchlet's, keeping every line and
//! column), `scoping` (a name first bound inside a block is declared before it, as Python scopes
//! it), `floordiv_hint` (`a // b` meant as floor division), `hints` (the torchlet spelling of a
//! Python habit torchlet cannot accept), `callee` (the call open at a cursor, for inspection),
//! `fn_marks` (statement marks inside script functions, so allocations there name their own
//! statement and its calls).

pub mod callee;
pub mod floordiv_hint;
pub mod fn_marks;
pub mod hints;
pub mod python_spelling;
pub mod scoping;
pub mod tokens;
