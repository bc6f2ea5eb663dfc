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
//! 3-D and transposed convolutions are keyed by every size (`RecordedNd`), with the same
//! estimate elsewhere: the nearest recorded case of the same dtype, kernel and stride, scaled.

use std::collections::BTreeSet;
use std::sync::Mutex;

use super::conv::ConvOptions;
use super::conv_workspace_table::{Recorded, RECORDED};
use super::conv_workspace_table_3d::RECORDED_3D;
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
        "conv2d {:?} input {:?} weight {:?} stride {:?} padding {:?} groups {}",
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

/// A 3-D or transposed convolution as recorded: its sizes, the workspaces (bytes) of its forward,
/// input gradient and weight gradient, and its output's element count.
pub(super) struct RecordedNd {
    pub dtype: DType,
    pub transposed: bool,
    /// [N, C, (D,) H, W].
    pub input: &'static [usize],
    /// [K, C / groups, …] (a transposed one's [C, K / groups, …]).
    pub weight: &'static [usize],
    pub stride: &'static [usize],
    pub padding: &'static [usize],
    /// A convolution's dilation; a transposed one's output padding.
    pub extra: &'static [usize],
    pub groups: usize,
    pub workspaces: [usize; 3],
    pub out_numel: usize,
}

/// A 3-D or transposed convolution to look up: the recorded fields and the output's size.
pub(super) struct CaseNd<'a> {
    pub dtype: DType,
    pub transposed: bool,
    pub input: &'a [usize],
    pub weight: &'a [usize],
    pub stride: &'a [usize],
    pub padding: &'a [usize],
    pub extra: &'a [usize],
    pub groups: usize,
    pub out_numel: usize,
}

impl CaseNd<'_> {
    fn matches(&self, r: &RecordedNd) -> bool {
        (
            r.dtype,
            r.transposed,
            r.input,
            r.weight,
            r.stride,
            r.padding,
            r.extra,
            r.groups,
        ) == (
            self.dtype,
            self.transposed,
            self.input,
            self.weight,
            self.stride,
            self.padding,
            self.extra,
            self.groups,
        )
    }

    fn same_kind(&self, r: &RecordedNd) -> bool {
        (r.dtype, r.transposed, &r.weight[2..], r.stride)
            == (self.dtype, self.transposed, &self.weight[2..], self.stride)
    }
}

/// The workspaces of a 3-D or transposed convolution, from `extra` rows and the 3-D table:
/// recorded, or scaled from the nearest of the same kind and said to be estimated.
pub(super) fn workspaces_of(case: &CaseNd, extra: &[RecordedNd]) -> Workspaces {
    let rows = || RECORDED_3D.iter().chain(extra);
    let [forward, input_grad, weight_grad] = match rows().find(|r| case.matches(r)) {
        Some(r) => r.workspaces,
        None => {
            let op = if case.transposed {
                "conv_transpose"
            } else {
                "conv"
            };
            note_estimated(format!(
                "{op}{}d {:?} input {:?} weight {:?} stride {:?} padding {:?} groups {}",
                case.input.len() - 2,
                case.dtype,
                case.input,
                case.weight,
                case.stride,
                case.padding,
                case.groups
            ));
            let ratio = |r: &RecordedNd| case.out_numel as f64 / r.out_numel.max(1) as f64;
            let nearest = rows()
                .filter(|r| case.same_kind(r))
                .min_by(|a, b| ratio(a).ln().abs().total_cmp(&ratio(b).ln().abs()));
            let scaled =
                nearest.map(|r| r.workspaces.map(|b| (b as f64 * ratio(r)).ceil() as usize));
            return Workspaces {
                estimated: true,
                ..workspaces_from(scaled.unwrap_or_default())
            };
        }
    };
    workspaces_from([forward, input_grad, weight_grad])
}

fn workspaces_from([forward, input_grad, weight_grad]: [usize; 3]) -> Workspaces {
    Workspaces {
        forward,
        input_grad,
        weight_grad,
        ..Default::default()
    }
}

/// The workspaces of a 3-D convolution of an `input` by a `weight` under `o`.
pub(super) fn workspaces_nd<const N: usize>(
    dtype: DType,
    input: &[usize],
    weight: &[usize],
    o: &ConvOptions<N>,
) -> Workspaces {
    let span = |a: usize| o.dilation[a] * (weight[2 + a] - 1) + 1;
    let out =
        |a: usize| (input[2 + a] + 2 * o.padding[a]).saturating_sub(span(a)) / o.stride[a] + 1;
    let out_numel = input[0] * weight[0] * (0..N).map(out).product::<usize>();
    let case = CaseNd {
        dtype,
        transposed: false,
        input,
        weight,
        stride: &o.stride,
        padding: &o.padding,
        extra: &o.dilation,
        groups: o.groups,
        out_numel,
    };
    workspaces_of(&case, &[])
}
