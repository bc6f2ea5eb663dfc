//! The model ops in scripts (`linear`, `bmm`, `layer_norm`, `dropout`, `relu_`): their spellings
//! and keywords, PyTorch's errors, and a session that keeps every tensor after one.
use crate::common;
use common::exclusive;
use common::plain;
use torchlet_session::{ScriptError, Session};

/// A session with a layer's tensors on the GPU.
fn session() -> Session {
    let (mut s, _) = Session::captured("<test>");
    plain(
        &mut s,
        "let x = randn(256, 512, #{device: \"cuda\"}); \
         let w = randn(1024, 256, #{device: \"cuda\"}); \
         let g = ones(1024, #{device: \"cuda\"});",
    );
    s
}

/// Run `code`, which must fail, leaving memory as it was; the error.
fn fails(s: &mut Session, code: &str) -> ScriptError {
    let figures = "`${memory_allocated()} ${memory_reserved()} ${x.shape} ${w.shape}`";
    let before = plain(s, figures);
    let e = s
        .execute(code)
        .error
        .unwrap_or_else(|| panic!("{code} should fail"));
    assert_eq!(plain(s, figures), before, "after `{code}`");
    e
}

#[test]
fn errors_read_as_pytorch_and_keep_the_session() {
    let _g = exclusive();
    let mut s = session();
    let e = fails(&mut s, "let h = linear(x, w, g);");
    assert_eq!(
        e.message,
        "mat1 and mat2 shapes cannot be multiplied (256x512 and 256x1024)"
    );
    let e = fails(&mut s, "let n = layer_norm(x, [1024]);");
    assert_eq!(
        e.message,
        "Given normalized_shape=[1024], expected input with shape [*, 1024], but got input of size[256, 512]"
    );
    let e = fails(&mut s, "let d = dropout(x, 1.5);");
    assert_eq!(e.kind, "ValueError");
    assert_eq!(
        e.message,
        "dropout probability has to be between 0 and 1, but got 1.5"
    );
    let e = fails(&mut s, "let y = bmm(x, w);");
    assert_eq!(e.message, "batch1 must be a 3D tensor");
    // Still usable: the same tensors make a layer.
    assert_eq!(plain(&mut s, "linear(w, x.t(), x[0]).shape"), "[1024, 512]");
}

#[test]
fn spellings_and_keywords() {
    let _g = exclusive();
    let mut s = session();
    let shapes = [
        ("layer_norm(x, 512).shape", "[256, 512]"),
        ("layer_norm(x, [512], #{eps: 1e-3}).shape", "[256, 512]"),
        (
            "layer_norm(x.view(2, 128, 512), [128, 512], (), (), 1e-5).shape",
            "[2, 128, 512]",
        ),
        ("dropout(x).shape", "[256, 512]"),
        ("dropout(x, #{p: 0.2}).shape", "[256, 512]"),
        ("w.matmul(x).shape", "[1024, 512]"),
        ("randn(2, 3, 4).bmm(randn(2, 4, 5)).shape", "[2, 3, 5]"),
        (
            "linear(randn(2, 3, 256, #{device: \"cuda\"}), w, ()).shape",
            "[2, 3, 1024]",
        ),
    ];
    for (code, want) in shapes {
        assert_eq!(plain(&mut s, code), want, "{code}");
    }
    assert_eq!(
        plain(&mut s, "dropout(x, 0.3, false).data_ptr() == x.data_ptr()"),
        "true"
    );
    assert_eq!(
        plain(&mut s, "let r = x.clone(); relu_(r); r.min().item() >= 0.0"),
        "true"
    );
    let e = s.execute("dropout(x, #{q: 1})").error.unwrap();
    assert_eq!(
        e.message,
        "dropout(): unexpected keyword 'q'; allowed: p, training"
    );
}

/// The sizes of the blocks `a` allocated (`+`) and freed (`-`) while `f` ran, in order.
fn block_events(a: &dyn torchlet_alloc::DeviceAllocator, f: impl FnOnce()) -> Vec<i64> {
    use torchlet_alloc::{HistoryMode, HistoryOptions, TraceAction};
    a.record_memory_history(HistoryOptions {
        enabled: Some(HistoryMode::All),
        max_entries: 100_000,
        clear_history: true,
    });
    f();
    let events = a.snapshot().device_traces[0]
        .iter()
        .filter_map(|e| match e.action {
            TraceAction::Alloc => Some(e.size as i64),
            TraceAction::FreeCompleted => Some(-(e.size as i64)),
            _ => None,
        })
        .collect();
    a.record_memory_history(HistoryOptions::disabled());
    events
}

#[test]
fn layer_norm_backward_of_many_short_rows_sums_partial_blocks() {
    // Every tensor of this test is made under the lock: the other tests read cuda:0's totals.
    let (_g, a) = common::gpu();
    use torchlet_core::device::Device;
    use torchlet_core::tensor::{Tensor, TensorOptions};
    let opts = TensorOptions::default()
        .device(Device::Cuda(0))
        .requires_grad(true);
    let (x, w, b) = (
        Tensor::zeros(&[70_000, 64], &opts).unwrap(),
        Tensor::ones(&[64], &opts).unwrap(),
        Tensor::zeros(&[64], &opts).unwrap(),
    );
    let y = x.layer_norm(&[64], Some(&w), Some(&b), 1e-5).unwrap();
    let loss = y.sum(None, false).unwrap();
    let events = block_events(a.as_ref(), || loss.backward(false).unwrap());
    // PyTorch's LaunchGammaBetaBackwardCUDAKernel for M > 64Ki and N / 32 < SMs / 2: dX, dgamma,
    // dbeta, the contiguous dY, then [ceil(M / 32), N] partial sums for each.
    let (rows, partial) = (70_000 * 64 * 4, 2188 * 64 * 4);
    let expected = [rows, 256, 256, rows, partial, partial];
    assert!(
        events.windows(expected.len()).any(|w| w == expected),
        "{events:?}"
    );
    assert!(w.grad().is_some() && b.grad().is_some());
}
