//! An interrupt at any point (inside an op, a `backward`, between statements) stops the input
//! with `KeyboardInterrupt`; the variables bound before are alive and unchanged, and no memory
//! is left behind beyond what the interrupted code had bound to names (as in Python).
mod common;

use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use torchlet::session::{CapturedOutput, Session, SessionOptions};

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

fn value(s: &mut Session, code: &str) -> String {
    let outcome = s.execute(code);
    if let Some(e) = outcome.error {
        panic!("{code}: {}", e.located());
    }
    outcome.value.map(|v| v.plain).unwrap_or_default()
}

#[test]
fn an_interrupt_anywhere_in_a_training_loop_keeps_the_session_whole() {
    let (_guard, a) = common::gpu();
    // Delays spread the interrupt over matmuls, reductions, backward and the update.
    for delay_us in [0, 50, 200, 700, 1500, 3100, 6300, 12700, 25500] {
        let started = Arc::new(AtomicBool::new(false));
        let mut s = session(started.clone());
        let before = a.memory_allocated();
        let x_sum = value(&mut s, "x.sum().item() == keep");
        assert_eq!(x_sum, "true");
        let handle = s.interrupt_handle();
        let stopper = std::thread::spawn(move || {
            while !started.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_micros(delay_us));
            handle.interrupt();
        });
        let error = s.execute(WORK).error.expect("interrupted");
        stopper.join().unwrap();
        assert_eq!(error.kind, "KeyboardInterrupt", "after {delay_us} µs");
        // Python keeps what the loop had bound; once those names go, so does their memory.
        let _ = s.execute("del h;");
        let _ = s.execute("del loss;");
        let _ = s.execute("w.grad = ();");
        assert_eq!(a.memory_allocated(), before, "after {delay_us} µs");
        assert_eq!(value(&mut s, "x.sum().item() == keep"), "true");
        assert_eq!(value(&mut s, "w.requires_grad && w.is_leaf"), "true");
        // And the session computes again.
        assert_eq!(value(&mut s, "(x * 0).sum().item()"), "0.0");
    }
}
