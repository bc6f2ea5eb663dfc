"""Write torchlet's tables of cuDNN workspaces from tests/data/torch_conv.json (2-D) and
tests/data/torch_conv3d.json (3-D, plain and transposed).

    python3 scripts/conv_workspace_table.py > crates/core/src/tensor/conv_workspace_table.rs
    python3 scripts/conv_workspace_table.py 3d > crates/core/src/tensor/conv_workspace_table_3d.rs

For every recorded conv2d case: the workspace of the forward, of the input's gradient and of the
weight's gradient (bytes; 0 where the algorithm took none), and whether the weight's gradient was
allocated first (the depthwise kernels). tests/tensors/conv.rs checks the table against the JSON.
"""

import json
import math
import pathlib
import sys

DTYPES = {"float32": ("F32", 4), "float16": ("F16", 2), "bfloat16": ("BF16", 2)}


def workspaces(events, grads):
    """[(grad size, its workspace)] in the order the grads (sizes in `grads`) were allocated.

    A workspace is an allocation freed at once, right after a grad's (the bias's gradient and its
    reduction's staging, allocated later, are none). A size may be in `grads` twice (the input's
    gradient and the weight's can be the same size): each allocation of it is the next grad.
    """
    events = [e for e in events if e[0] != "segment_alloc"]
    pending, found = list(grads), []
    after_grad = False
    for i, (action, size) in enumerate(events):
        if action != "alloc":
            continue
        freed_next = i + 1 < len(events) and events[i + 1] == ["free_completed", size]
        workspace = after_grad and freed_next and found[-1][1] == 0
        if size in pending and not workspace:
            pending.remove(size)
            found.append([size, 0])
            after_grad = True
            continue
        if workspace:
            found[-1][1] = size
        after_grad = False
    return found


def grad_workspaces(events, dx, dw):
    """The input gradient's workspace, the weight gradient's, and whether the weight's came first.

    With equal sizes the order cannot tell the grads apart: the input's comes first but for the
    depthwise kernels, whose sizes differ.
    """
    bwd = workspaces(events, [dx, dw])
    if dx == dw:
        return bwd[0][1], bwd[1][1], False
    of = lambda size: next(w for g, w in bwd if g == size)  # noqa: E731
    return of(dx), of(dw), bwd[0][0] == dw


def triple(v):
    return list(v) if isinstance(v, list) else [v, v, v]


def main_3d(here):
    doc = json.loads((here / "torch_conv3d.json").read_text())
    rows = []
    for r in doc["records"]:
        c = r["case"]
        if "error" in r:
            continue
        name, size = DTYPES[c["dtype"]]
        n, ch, d, h, w, k, kernel, stride, pad, extra, groups = c["shape"]
        transposed = c["op"] == "conv_transpose3d"
        weight = [ch, k // groups] if transposed else [k, ch // groups]
        weight += triple(kernel)
        out = math.prod(r["out"]["shape"])
        fwd = workspaces(r["forward"], [out * size])[0][1]
        dx, dw = math.prod([n, ch, d, h, w]) * size, math.prod(weight) * size
        dx_ws, dw_ws, _ = grad_workspaces(r["backward"], dx, dw)
        rows.append(
            f"    RecordedNd {{ dtype: DType::{name}, transposed: {str(transposed).lower()}, "
            f"input: &{[n, ch, d, h, w]}, weight: &{weight}, stride: &{triple(stride)}, "
            f"padding: &{triple(pad)}, extra: &{triple(extra)}, groups: {groups}, "
            f"workspaces: [{fwd}, {dx_ws}, {dw_ws}], out_numel: {out} }},"
        )
    env = doc["recorded_with"]
    print(f"""//! cuDNN's workspaces for the 3-D convolutions recorded with PyTorch {env['torch']} (cuDNN
//! {env['cudnn']}) on an {env['device']}: written by scripts/conv_workspace_table.py from
//! tests/data/torch_conv3d.json.

use super::conv_workspace::RecordedNd;
use super::DType;

/// Every recorded 3-D case, plain and transposed.
pub(super) const RECORDED_3D: &[RecordedNd] = &[""")
    for row in rows:
        print(row)
    print("];")


def main():
    here = pathlib.Path(__file__).parent.parent / "tests" / "data"
    if sys.argv[1:] == ["3d"]:
        return main_3d(here)
    doc = json.loads((here / "torch_conv.json").read_text())
    rows = []
    for r in doc["records"]:
        c = r["case"]
        if c["op"] != "conv2d" or "error" in r:
            continue
        name, size = DTYPES[c["dtype"]]
        n, ch, h, w, k, kr, stride, pad, groups = c["shape"]
        out = 1
        for d in r["out"]["shape"]:
            out *= d
        fwd = workspaces(r["forward"], [out * size])[0][1]
        dx, dw = n * ch * h * w * size, k * (ch // groups) * kr * kr * size
        dx_ws, dw_ws, weight_first = grad_workspaces(r["backward"], dx, dw)
        rows.append(
            f"    Recorded {{ dtype: DType::{name}, shape: {c['shape']}, channels_last: {str(c['channels_last']).lower()}, "
            f"forward: {fwd}, input_grad: {dx_ws}, weight_grad: {dw_ws}, "
            f"weight_grad_first: {str(weight_first).lower()} }},"
        )
    env = doc["recorded_with"]
    print(f"""//! cuDNN's workspaces for the convolutions recorded with PyTorch {env['torch']} (cuDNN {env['cudnn']}) on
//! an {env['device']}: written by scripts/conv_workspace_table.py from tests/data/torch_conv.json.

use super::DType;

/// One recorded convolution: its case and the workspace (bytes) of each of its three kernels.
pub(super) struct Recorded {{
    pub dtype: DType,
    /// N, C, H, W, K, R (= S), stride, padding, groups.
    pub shape: [usize; 9],
    pub channels_last: bool,
    pub forward: usize,
    pub input_grad: usize,
    pub weight_grad: usize,
    /// The depthwise kernels allocate the weight's gradient before the input's.
    pub weight_grad_first: bool,
}}

/// Every recorded case.
pub(super) const RECORDED: &[Recorded] = &[""")
    for row in rows:
        print(row.replace("[", "[").replace("]", "]"))
    print("];")


if __name__ == "__main__":
    main()
