//! The caching allocator on its own: sizes, splitting and merging, statistics, snapshots, empty_cache, out of memory, settings, threads.
#[path = "../common/mod.rs"]
mod common;

mod config;
mod empty_cache;
mod expandable;
mod oom;
mod properties;
mod sizes;
mod snapshot;
mod split_merge;
mod stats;
mod streams;
mod summary;
mod threads;
