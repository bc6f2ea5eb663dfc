//! Selection by a bool mask (`nonzero`, `x[mask]`, `masked_select`) on every device: values
//! against positions worked out here, float64 gradients against finite differences, and the
//! errors. Their allocator events are PyTorch's in `py_mask_select.py`
//! (tests/memory/parity_python.rs).
use crate::common;
use common::device_test;

use super::conv::{check_gradients, vec_of};
use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};

fn bools(v: &[bool], shape: &[usize], device: Device) -> Tensor {
    let v = v.iter().map(|&b| Scalar::Bool(b)).collect();
    let o = TensorOptions::default().dtype(DType::Bool).device(device);
    Tensor::from_values(v, shape.to_vec(), &o).unwrap()
}

fn floats(v: &[f64], shape: &[usize], device: Device) -> Tensor {
    let v = v.iter().map(|&x| Scalar::Float(x)).collect();
    let o = TensorOptions::default().device(device);
    Tensor::from_values(v, shape.to_vec(), &o).unwrap()
}

const GRID: [f64; 6] = [1., 2., 3., 4., 5., 6.];
const PICK: [bool; 6] = [false, true, false, true, true, false];

device_test!(
    fn nonzero_gives_row_major_coordinates(device: Device) {
        let _gpu = common::exclusive();
        let m = bools(&PICK, &[2, 3], device);
        let nz = m.nonzero().unwrap();
        assert_eq!((nz.dims(), nz.dtype()), (&[3usize, 2][..], DType::I64));
        assert_eq!(vec_of(&nz), [0., 1., 1., 0., 1., 1.]);
        let none = bools(&[false; 6], &[6], device).nonzero().unwrap();
        assert_eq!(none.dims(), &[0, 1]);
        // Any nonzero value counts, not only bools.
        let f = floats(&[0., -2., 0., 0.5], &[4], device);
        assert_eq!(vec_of(&f.nonzero().unwrap()), [1., 3.]);
    }
);

device_test!(
    fn a_mask_selects_elements_or_leading_slices(device: Device) {
        let _gpu = common::exclusive();
        let x = floats(&GRID, &[2, 3], device);
        let picked = x.index_by_mask(&bools(&PICK, &[2, 3], device)).unwrap();
        assert_eq!(
            (picked.dims(), vec_of(&picked)),
            (&[3usize][..], vec![2., 4., 5.])
        );
        let rows = x
            .index_by_mask(&bools(&[false, true], &[2], device))
            .unwrap();
        assert_eq!(
            (rows.dims(), vec_of(&rows)),
            (&[1usize, 3][..], vec![4., 5., 6.])
        );
        let sel = x.masked_select(&bools(&PICK, &[2, 3], device)).unwrap();
        assert_eq!(vec_of(&sel), [2., 4., 5.]);
    }
);

device_test!(
    fn gradients_of_a_mask_selection_are_finite_differences(device: Device) {
        let _gpu = common::exclusive();
        let cells = bools(
            &[true, false, true, true, false, false, true, false],
            &[2, 4],
            device,
        );
        check_gradients(device, &[&[2, 4]], |ts| {
            ts[0].index_by_mask(&cells).unwrap()
        });
        let rows = bools(&[true, false, true], &[3], device);
        check_gradients(device, &[&[3, 2]], |ts| ts[0].index_by_mask(&rows).unwrap());
    }
);

device_test!(
    fn bad_masks_are_refused_with_pytorchs_words(device: Device) {
        let _gpu = common::exclusive();
        let x = floats(&GRID, &[2, 3], device);
        let err = x
            .index_by_mask(&bools(&[true, false, true], &[3], device))
            .unwrap_err();
        assert!(
            err.to_string().contains("The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3] at index 0"),
            "{err}"
        );
        let err = x.index_by_mask(&x).unwrap_err();
        assert!(err.to_string().contains("a mask must be bool"), "{err}");
        let err = x.masked_select(&x).unwrap_err();
        assert!(
            err.to_string()
                .contains("masked_select: expected BoolTensor for mask, got Float"),
            "{err}"
        );
        // The session goes on: the tensors are intact.
        assert_eq!(vec_of(&x), GRID);
    }
);

/// CUB's scratch in `nonzero` (reduce, flagged select) and `masked_scatter_` (exclusive sum)
/// against every case PyTorch 2.11 allocated (`tests/data/select_scratch.json`, 64 to 50M mask
/// elements): the sizes are tile counts no header states.
#[test]
fn cub_scratch_of_nonzero_and_masked_scatter_is_pytorchs() {
    use torchlet_core::device::cub_scratch::{flagged_select_bytes, reduce_bytes, scan_bytes};
    let recorded: serde_json::Value =
        serde_json::from_str(include_str!("../data/select_scratch.json")).expect("recorded JSON");
    let cases = recorded["cases"].as_array().expect("cases");
    assert!(cases.len() >= 60, "{} cases", cases.len());
    for case in cases {
        let n = case["n"].as_u64().unwrap() as usize;
        let count = case["count"].as_u64().unwrap() as usize;
        let allocs: Vec<usize> = case["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e[0] == "alloc")
            .map(|e| e[1].as_u64().unwrap() as usize)
            .collect();
        let want = match case["op"].as_str().unwrap() {
            "nonzero" => vec![4, reduce_bytes(n, 4), count * 8, flagged_select_bytes(n)],
            _ => vec![n * 8, scan_bytes(n, 8)],
        };
        assert_eq!(allocs, want, "{case}");
    }
}
