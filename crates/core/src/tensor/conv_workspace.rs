//! cuDNN's workspaces for a convolution on a CUDA device, as PyTorch 2.11's defaults
//! (`benchmark=False`, `deterministic=False`) pick them: recorded per shape, estimated elsewhere.
//!
//! Note [cuDNN workspaces]: the algorithm cuDNN's heuristics choose, and with it the workspace,
//! depends on the exact shapes, dtype, layout and GPU; nothing short of asking cuDNN gives it.
//! torchlet keeps what PyTorch allocated for each recorded case (`conv_workspace_table`, from
//! `tests/data/torch_conv.json`). For any other shape it scales the recorded case of the same kind
//! (dtype, kernel size, stride, groups, layout) nearest in output size by the output's size, and
//! says that it did (`estimated`). PyTorch's own depthwise kernels (float32 and bfloat16, where
//! groups equal the input channels) take no workspace and allocate the weight's gradient first.

use std::collections::BTreeSet;
use std::sync::Mutex;

use super::conv_workspace_table::{Recorded, RECORDED};
use super::DType;

/// The workspaces (bytes) of a convolution's forward and of its two gradients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Workspaces {
    /// The forward's.
    pub forward: usize,
    /// The input gradient's.
    pub input_grad: usize,
    /// The weight gradient's.
    pub weight_grad: usize,
    /// Whether the weight's gradient is allocated before the input's.
    pub weight_grad_first: bool,
    /// Whether the sizes are estimated (no recorded case of this shape).
    pub estimated: bool,
}

/// One convolution as the table keys it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvCase {
    /// The input's and weight's dtype.
    pub dtype: DType,
    /// Input [N, C, H, W].
    pub input: [usize; 4],
    /// Weight [K, C / groups, R, S].
    pub weight: [usize; 4],
    /// (height, width) each.
    pub stride: [usize; 2],
    /// (height, width).
    pub padding: [usize; 2],
    /// (height, width).
    pub dilation: [usize; 2],
    /// Channel groups.
    pub groups: usize,
    /// Whether the convolution runs channels-last.
    pub channels_last: bool,
}

impl ConvCase {
    fn square(&self) -> bool {
        let w = self.weight;
        w[2] == w[3]
            && self.stride[0] == self.stride[1]
            && self.padding[0] == self.padding[1]
            && self.dilation == [1, 1]
    }

    fn matches(&self, r: &Recorded) -> bool {
        let [n, c, h, w] = self.input;
        let key = [
            n,
            c,
            h,
            w,
            self.weight[0],
            self.weight[2],
            self.stride[0],
            self.padding[0],
            self.groups,
        ];
        self.square()
            && r.dtype == self.dtype
            && r.channels_last == self.channels_last
            && r.shape == key
    }

    fn same_kind(&self, r: &Recorded) -> bool {
        let [_, c, _, _, k, kr, stride, _, groups] = r.shape;
        let class = |g: usize, c: usize, k: usize| (g == 1, g == c && k % c == 0);
        self.square()
            && r.dtype == self.dtype
            && r.channels_last == self.channels_last
            && kr == self.weight[2]
            && stride == self.stride[0]
            && class(groups, c, k) == class(self.groups, self.input[1], self.weight[0])
    }

    /// Whether PyTorch runs its own depthwise kernels (not cuDNN): groups equal to the input
    /// channels, the output channels a multiple of them, not float16 (which cuDNN takes).
    fn native_depthwise(&self) -> bool {
        let c = self.input[1];
        self.groups > 1
            && self.groups == c
            && self.weight[0] % c == 0
            && self.dtype != DType::F16
            && !self.channels_last
    }

    fn output_numel(&self) -> usize {
        let out = |a: usize| {
            let span = self.dilation[a] * (self.weight[2 + a] - 1) + 1;
            (self.input[2 + a] + 2 * self.padding[a]).saturating_sub(span) / self.stride[a] + 1
        };
        self.input[0] * self.weight[0] * out(0) * out(1)
    }

    fn recorded_numel(r: &Recorded) -> usize {
        let [n, _, h, w, k, kr, stride, pad, _] = r.shape;
        let out = |x: usize| (x + 2 * pad - kr) / stride + 1;
        n * k * out(h) * out(w)
    }
}

/// The cases whose workspaces were estimated, for the note the front ends print.
static ESTIMATED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// The convolutions whose cuDNN workspaces were estimated so far (described as PyTorch's shapes).
pub fn estimated_workspaces() -> Vec<String> {
    ESTIMATED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .cloned()
        .collect()
}

/// Remember that a convolution's workspaces were estimated (`described` as PyTorch's shapes).
pub(crate) fn note_estimated(described: String) {
    ESTIMATED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(described);
}

/// The workspaces of `case`: recorded, PyTorch's depthwise kernels' none, or estimated.
pub fn workspaces(case: &ConvCase) -> Workspaces {
    if let Some(r) = RECORDED.iter().find(|r| case.matches(r)) {
        return Workspaces {
            forward: r.forward,
            input_grad: r.input_grad,
            weight_grad: r.weight_grad,
            weight_grad_first: r.weight_grad_first,
            estimated: false,
        };
    }
    if case.native_depthwise() {
        return Workspaces {
            weight_grad_first: true,
            ..Default::default()
        };
    }
    note_estimated(format!(
        "{:?} input {:?} weight {:?} stride {:?} padding {:?} groups {}",
        case.dtype, case.input, case.weight, case.stride, case.padding, case.groups
    ));
    let numel = case.output_numel() as f64;
    let distance = |r: &&Recorded| (numel / ConvCase::recorded_numel(r) as f64).ln().abs();
    let nearest = RECORDED
        .iter()
        .filter(|r| case.same_kind(r))
        .min_by(|a, b| distance(a).total_cmp(&distance(b)));
    let Some(r) = nearest else {
        return Workspaces {
            estimated: true,
            ..Default::default()
        };
    };
    let ratio = numel / ConvCase::recorded_numel(r) as f64;
    let scale = |bytes: usize| (bytes as f64 * ratio).ceil() as usize;
    Workspaces {
        forward: scale(r.forward),
        input_grad: scale(r.input_grad),
        weight_grad: scale(r.weight_grad),
        weight_grad_first: r.weight_grad_first,
        estimated: true,
    }
}
