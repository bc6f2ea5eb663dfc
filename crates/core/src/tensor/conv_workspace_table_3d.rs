//! cuDNN's workspaces for the 3-D convolutions recorded with PyTorch 2.11 on an H100
//! (`tests/parity/pending/py_conv_more.py`).

use super::conv_workspace::RecordedNd;
use super::DType;

/// Every recorded 3-D case.
pub(super) const RECORDED_3D: &[RecordedNd] = &[RecordedNd {
    dtype: DType::F32,
    transposed: false,
    input: &[2, 4, 16, 32, 32],
    weight: &[16, 4, 3, 3, 3],
    stride: &[1, 1, 1],
    padding: &[1, 1, 1],
    extra: &[1, 1, 1],
    groups: 1,
    workspaces: [2628368, 0, 2743467],
    out_numel: 524288,
}];
