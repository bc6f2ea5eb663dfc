//! The contiguous kernels' walk (contig_walk.cuh) covers every element exactly once, checked on
//! the host: tests/gpu/contig_walk.cpp, compiled with the system's C++ compiler, runs every
//! thread of the grid the backend launches. No GPU needed; on the H200 the tensors tests'
//! `contiguous_ops_reach_every_element_of_every_block_shape` checks the same with real kernels.

use std::path::Path;
use std::process::Command;

use torchlet_core::device::cuda::compile::{CONTIG_BLOCK, CONTIG_VECTORS};

/// Compile the harness for one element type and block shape, run it, and return what it printed.
fn walk(elem: &str, vectors: usize, block: u32) -> String {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("walk");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gpu/contig_walk.cpp");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built = Command::new(&cxx)
        .args(["-std=c++17", "-O1", "-o"])
        .arg(&exe)
        .arg(format!("-DT={elem}"))
        .arg(format!("-DWIDE_VPT={vectors}"))
        .arg(format!("-DCBLOCK={block}"))
        .arg(&source)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run the C++ compiler `{cxx}` ({e}): install g++ or set CXX")
        });
    assert!(
        built.status.success(),
        "{cxx} failed on {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = Command::new(&exe).output().unwrap();
    let out = String::from_utf8_lossy(&ran.stdout).into_owned();
    assert!(
        ran.status.success(),
        "{elem}, {vectors} vectors, {block} threads:\n{out}"
    );
    out
}

#[test]
fn the_contiguous_walk_stores_every_element_once_for_every_element_size() {
    for elem in ["char", "short", "float", "double"] {
        let out = walk(elem, CONTIG_VECTORS, CONTIG_BLOCK);
        assert!(out.contains("every element once"), "{out}");
    }
}

#[test]
fn the_contiguous_walk_holds_for_several_vectors_a_thread_and_small_blocks() {
    // Two vectors a thread (the other setting measured) and the smallest block the tail allows.
    for (elem, vectors, block) in [
        ("float", 2, 16),
        ("double", 2, 16),
        ("char", 1, 16),
        ("float", 2, 256),
    ] {
        let out = walk(elem, vectors, block);
        assert!(out.contains("every element once"), "{out}");
    }
}
