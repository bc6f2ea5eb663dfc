//! Memory as PyTorch has it, program by program: parity with recorded traces, holders, ledgers, pictures, fit, faults.
#[path = "../common/mod.rs"]
mod common;

mod fault_injection;
mod fit;
mod fuzz_programs;
mod gpu_lock;
mod holders;
mod leak_warnings;
mod ledger;
mod listings;
mod oom_diagnosis;
mod parity;
mod parity_python;
mod pictures;
mod scratch_sizes;
mod semantics;
mod soak;
