//! [`device_test!`](crate::common::device_test): one test body stamped as one test per device, so
//! a failure names the device it failed on.
//!
//! `device_test!(fn name(device: Device) { … })` (or `device: &str`, the name scripts use) gives
//! `name_cpu`, `name_sim` and `name_cuda`. A test process has one set of devices, set up once:
//! cuda:0 is simulated unless `TORCHLET_TEST_DEVICE=cuda` asks for the real GPU. So:
//! - a plain build runs `name_cpu` and `name_sim` (on the simulated cuda:0) and ignores
//!   `name_cuda`;
//! - a `--features gpu-tests` build, run with `TORCHLET_TEST_DEVICE=cuda`, runs `name_cpu` and
//!   `name_cuda` (on the real cuda:0) and ignores `name_sim`, whose device this process cannot
//!   simulate beside the real one.
//!
//! Where the environment contradicts the build (`name_sim` with the real GPU set up, `name_cuda`
//! without it, as `--include-ignored` can ask), the test fails and says how to run it.
use torchlet_core::device::{self, Device};

/// Which of a stamped test's devices one of its tests runs on.
#[derive(Clone, Copy, Debug)]
pub enum Stamp {
    /// The CPU.
    Cpu,
    /// cuda:0 simulated in host memory.
    Sim,
    /// cuda:0 on the real GPU.
    Cuda,
}

/// A device as a test body takes it: a [`Device`], or the name scripts give it.
pub trait TestDevice {
    /// The CPU.
    fn cpu() -> Self;
    /// cuda:0.
    fn cuda() -> Self;
}

impl TestDevice for Device {
    fn cpu() -> Self {
        Device::Cpu
    }
    fn cuda() -> Self {
        Device::Cuda(0)
    }
}

impl TestDevice for &'static str {
    fn cpu() -> Self {
        "cpu"
    }
    fn cuda() -> Self {
        "cuda"
    }
}

/// Run test `test`'s `body` on the device `stamp` names, once the devices are set up and the GPU
/// is held shared for the rest of the test (as [`super::devices`] holds it). Fails where this
/// process's cuda:0 is not the one `stamp` names.
pub fn run_stamped<T: TestDevice>(test: &str, stamp: Stamp, body: impl FnOnce(T)) {
    super::uses_gpu();
    let device = match stamp {
        Stamp::Cpu => T::cpu(),
        Stamp::Sim => {
            assert!(
                device::is_simulated(),
                "{test} runs on the simulated GPU, but TORCHLET_TEST_DEVICE=cuda set up the real one \
                 in this process: unset it, or build with --features gpu-tests to run the _cuda test"
            );
            T::cuda()
        }
        Stamp::Cuda => {
            super::require_real_gpu();
            assert!(!device::is_simulated(), "{test}: cuda:0 is simulated here");
            T::cuda()
        }
    };
    body(device);
}

/// One `#[test]` per device from one body: `name_cpu`, `name_sim` and `name_cuda` (see the
/// module's documentation for which of them a build runs).
// A binary whose tests all run on one device set stamps none.
#[allow(unused_macros)]
macro_rules! device_test {
    ($(#[$meta:meta])* fn $name:ident($device:ident) $body:block) => {
        $crate::common::device_test!(
            $(#[$meta])* fn $name($device: torchlet_core::device::Device) $body
        );
    };
    ($(#[$meta:meta])* fn $name:ident($device:ident: $ty:ty) $body:block) => {
        paste::paste! {
            $(#[$meta])*
            #[test]
            fn [<$name _cpu>]() {
                $crate::common::device_test::run_stamped::<$ty>(
                    concat!(stringify!($name), "_cpu"),
                    $crate::common::device_test::Stamp::Cpu,
                    |$device: $ty| $body,
                );
            }

            $(#[$meta])*
            #[test]
            #[cfg_attr(
                feature = "gpu-tests",
                ignore = "the simulated GPU: a gpu-tests build runs this body on the real one (the _cuda test); build without --features gpu-tests to run it simulated"
            )]
            fn [<$name _sim>]() {
                $crate::common::device_test::run_stamped::<$ty>(
                    concat!(stringify!($name), "_sim"),
                    $crate::common::device_test::Stamp::Sim,
                    |$device: $ty| $body,
                );
            }

            $(#[$meta])*
            #[test]
            #[cfg_attr(
                not(feature = "gpu-tests"),
                ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
            )]
            fn [<$name _cuda>]() {
                $crate::common::device_test::run_stamped::<$ty>(
                    concat!(stringify!($name), "_cuda"),
                    $crate::common::device_test::Stamp::Cuda,
                    |$device: $ty| $body,
                );
            }
        }
    };
}
pub(crate) use device_test;
