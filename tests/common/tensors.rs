//! Tensors built from values a test knows, and read back to compare.
use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};

/// Options for a tensor of `dtype` on `device`.
pub fn opts(dtype: DType, device: Device) -> TensorOptions {
    TensorOptions::default().dtype(dtype).device(device)
}

/// `0, 1, 2, …` in `shape`, of `dtype`, on `device`.
pub fn iota(shape: &[usize], dtype: DType, device: Device) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n).map(|i| Scalar::Int(i as i64)).collect();
    Tensor::from_values(v, shape.to_vec(), &opts(dtype, device)).unwrap()
}

/// `n` values in [-5.05, 5.05), different for each `salt`, none of them special.
pub fn sample_values(n: usize, salt: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 7919 + salt * 104729) % 101) as f64 / 10.0 - 5.05)
        .collect()
}

/// A tensor's elements, copied to the host as f64.
pub fn values_of(t: &Tensor) -> Vec<f64> {
    t.to_vec_f64().unwrap()
}
