//! Shapes whose element count, strides or bytes overflow int64 are PyTorch's errors, on every
//! device, and the session goes on.
use crate::common;
use common::device_test;

use serde_json::Value;
use torchlet_core::device::Device;
use torchlet_session::Session;

fn recorded() -> Vec<(String, String, String)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/torch_size_errors.json"
    );
    let text = std::fs::read_to_string(path).expect("tests/data/torch_size_errors.json");
    let json: Value = serde_json::from_str(&text).expect("valid JSON");
    json["cases"]
        .as_array()
        .expect("a list of cases")
        .iter()
        .map(|c| {
            let field = |k: &str| c[k].as_str().expect(k).to_string();
            (field("case"), field("device"), field("error"))
        })
        .collect()
}

#[test]
fn overflowing_shapes_give_pytorchs_errors_and_the_session_goes_on() {
    let (_guard, _) = common::gpu();
    let cases = recorded();
    assert!(
        cases.len() >= 10,
        "the recording has every case on both devices"
    );
    for (case, device, expected) in cases {
        let (mut s, _) = Session::captured("<test>");
        assert!(s.execute("let kept = ones(3);").error.is_none());
        let code = case.replace("DEV", &device);
        let error = s
            .execute(&code)
            .error
            .unwrap_or_else(|| panic!("{code}: no error"));
        assert_eq!(
            format!("{}: {}", error.kind, error.message),
            expected,
            "{code}"
        );
        let after = s.execute("kept.sum().item()");
        assert_eq!(
            after.value.map(|v| v.plain).as_deref(),
            Some("3.0"),
            "{code}"
        );
    }
}

device_test!(
    fn an_expanded_view_past_int64_elements_is_refused(device: Device) {
        let t = torchlet_core::tensor::Tensor::ones(
            &[1],
            &torchlet_core::tensor::TensorOptions::default().device(device),
        )
        .expect("ones");
        let e = t.expand(&[1 << 40, 1 << 40]).expect_err("numel overflows");
        assert_eq!(e.to_string(), "numel: integer multiplication overflow");
        assert_eq!(
            t.expand(&[1 << 20, 1 << 20]).expect("fits").numel(),
            1 << 40
        );
    }
);
