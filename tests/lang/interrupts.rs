//! An interrupt at any point (inside an op, a `backward`, between statements) stops the input
//! with `KeyboardInterrupt`; the variables bound before are alive and unchanged, and no memory
//! is left behind beyond what the interrupted code had bound to names (as in Python).
use crate::common;

use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use torchlet_session::{CapturedOutput, Session, SessionOptions};

/// A long training loop: forward, backward, update, again and again.
const WORK: &str = r#"started();
loop {
    let h = x.matmul(w).relu();
    let loss = (h * h).mean();
    loss.backward();
    no_grad { w.sub_(w.grad * 0.0001); }
    w.grad = ();
}"#;

fn session(started: Arc<AtomicBool>) -> Session {
    let options = SessionOptions {
        source_name: Some("<interrupt>".into()),
        ..Default::default()
    };
    let mut s = Session::new(options, Rc::new(CapturedOutput::default()));
    s.engine_mut()
        .register_fn("started", move || started.store(true, Ordering::SeqCst));
    let setup = r#"manual_seed(0);
        let x = randn(512, 512, #{device: "cuda"});
        let w = randn(512, 512, #{device: "cuda", requires_grad: true});
        let keep = x.sum().item();
        // The process-wide cuBLAS workspaces (forward and backward) exist from here on.
        x.matmul(w).sum().backward(); w.grad = ();"#;
    assert!(s.execute(setup).error.is_none());
    s
}

/// Interrupts `s` from another thread `delay_us` after the input under test calls `started()`.
fn interrupt_after(
    s: &Session,
    started: Arc<AtomicBool>,
    delay_us: u64,
) -> std::thread::JoinHandle<()> {
    let handle = s.interrupt_handle();
    std::thread::spawn(move || {
        while !started.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_micros(delay_us));
        handle.interrupt();
    })
}

#[test]
fn an_interrupt_anywhere_in_a_training_loop_keeps_the_session_whole() {
    let (_guard, a) = common::gpu();
    // Delays spread the interrupt over matmuls, reductions, backward and the update.
    for delay_us in [0, 50, 200, 700, 1500, 3100, 6300, 12700, 25500] {
        let started = Arc::new(AtomicBool::new(false));
        let mut s = session(started.clone());
        let before = a.memory_allocated();
        let x_sum = common::plain(&mut s, "x.sum().item() == keep");
        assert_eq!(x_sum, "true");
        let stopper = interrupt_after(&s, started.clone(), delay_us);
        let error = s.execute(WORK).error.expect("interrupted");
        stopper.join().unwrap();
        assert_eq!(error.kind, "KeyboardInterrupt", "after {delay_us} µs");
        // Python keeps what the loop had bound; once those names go, so does their memory.
        let _ = s.execute("del h;");
        let _ = s.execute("del loss;");
        let _ = s.execute("w.grad = ();");
        assert_eq!(a.memory_allocated(), before, "after {delay_us} µs");
        assert_eq!(common::plain(&mut s, "x.sum().item() == keep"), "true");
        assert_eq!(
            common::plain(&mut s, "w.requires_grad && w.is_leaf"),
            "true"
        );
        // And the session computes again.
        assert_eq!(common::plain(&mut s, "(x * 0).sum().item()"), "0.0");
    }
}

/// Out of memory again and again under a cap: each request flushes the cache, retries, and
/// fails; the next one makes a new segment for the flush to release.
const RETRIES: &str = r#"started();
loop {
    try { let b = empty(15000000, #{device: "cuda"}); } catch (e) { failed += 1; }
    let c = empty(1250000, #{device: "cuda"});
    c = ();
}"#;

#[test]
fn an_interrupt_during_allocation_retries_keeps_the_session_whole() {
    let (_guard, a) = common::gpu();
    let retries = || a.memory_stats()["num_alloc_retries"];
    let retries_before = retries();
    for delay_us in [0, 30, 100, 300, 1000, 3000] {
        let started = Arc::new(AtomicBool::new(false));
        let mut s = session(started.clone());
        // 80 MiB beyond what the session holds (its tensors and the cuBLAS workspaces).
        let cap_bytes = a.memory_reserved() + (80 << 20);
        let cap = cap_bytes as f64 / a.mem_get_info().unwrap().1 as f64;
        common::plain(
            &mut s,
            &format!("cuda::set_per_process_memory_fraction({cap}); failed = 0;"),
        );
        common::plain(&mut s, "keep30 = empty(7500000, #{device: \"cuda\"});");
        let before = a.memory_allocated();
        let stopper = interrupt_after(&s, started.clone(), delay_us);
        let error = s.execute(RETRIES).error.expect("interrupted");
        stopper.join().unwrap();
        assert_eq!(error.kind, "KeyboardInterrupt", "after {delay_us} µs");
        let _ = s.execute("del b;");
        let _ = s.execute("c = ();");
        assert_eq!(a.memory_allocated(), before, "after {delay_us} µs");
        assert!(a.memory_reserved() <= cap_bytes, "the cap held");
        // The session goes on: what was bound is there, and the cap can be lifted.
        assert_eq!(common::plain(&mut s, "keep30.numel()"), "7500000");
        common::plain(
            &mut s,
            "cuda::set_per_process_memory_fraction(1.0); keep30 = ();",
        );
        a.empty_cache();
    }
    assert!(
        retries() > retries_before,
        "the interrupts fell among retries"
    );
}
