//! torchlet's `torch` package: its Python sources, part of the binary, and the import finder that
//! serves them, so `import torch`, `import torch.nn as nn` and `from torch.nn import functional as
//! F` resolve as they do with PyTorch installed.

use rustpython_vm::{PyResult, VirtualMachine};

/// Each module of the package (and `_torchlet_notebook`, the kernel's helpers): its dotted name, whether it is a package, and its source.
const SOURCES: &[(&str, bool, &str)] = &[
    ("torch", true, include_str!("../py/torch/__init__.py")),
    (
        "torch._tensor",
        false,
        include_str!("../py/torch/_tensor.py"),
    ),
    (
        "torch.autograd",
        false,
        include_str!("../py/torch/autograd.py"),
    ),
    (
        "torch.random",
        false,
        include_str!("../py/torch/random.py"),
    ),
    (
        "torch.cuda",
        true,
        include_str!("../py/torch/cuda/__init__.py"),
    ),
    (
        "torch.cuda.memory",
        false,
        include_str!("../py/torch/cuda/memory.py"),
    ),
    (
        "torch.cuda.streams",
        false,
        include_str!("../py/torch/cuda/streams.py"),
    ),
    ("torch.nn", true, include_str!("../py/torch/nn/__init__.py")),
    (
        "torch.nn.functional",
        false,
        include_str!("../py/torch/nn/functional.py"),
    ),
    (
        "torch.nn.modules",
        false,
        include_str!("../py/torch/nn/modules.py"),
    ),
    (
        "torch.nn.init",
        false,
        include_str!("../py/torch/nn/init.py"),
    ),
    (
        "torch.nn.utils",
        false,
        include_str!("../py/torch/nn/utils.py"),
    ),
    ("torch.linalg", false, include_str!("../py/torch/linalg.py")),
    (
        "torch._einsum",
        false,
        include_str!("../py/torch/_einsum.py"),
    ),
    (
        "torch.serialization",
        false,
        include_str!("../py/torch/serialization.py"),
    ),
    (
        "torch.optim",
        true,
        include_str!("../py/torch/optim/__init__.py"),
    ),
    (
        "torch.optim.lr_scheduler",
        false,
        include_str!("../py/torch/optim/lr_scheduler.py"),
    ),
    (
        "torch.utils",
        true,
        "\"\"\"torch.utils: checkpoint.\"\"\"\n",
    ),
    (
        "torch.utils.checkpoint",
        false,
        include_str!("../py/torch/utils/checkpoint.py"),
    ),
    ("torch.amp", false, include_str!("../py/torch/amp.py")),
    (
        "torch.version",
        false,
        include_str!("../py/torch/version.py"),
    ),
    (
        "torch.nn.attention",
        false,
        include_str!("../py/torch/nn/attention.py"),
    ),
    (
        "torch.backends",
        true,
        include_str!("../py/torch/backends/__init__.py"),
    ),
    (
        "torch.backends.cuda",
        false,
        include_str!("../py/torch/backends/cuda.py"),
    ),
    (
        "torch.backends.cudnn",
        false,
        include_str!("../py/torch/backends/cudnn.py"),
    ),
    (
        "torch.distributed",
        true,
        include_str!("../py/torch/distributed/__init__.py"),
    ),
    (
        "torch.distributed.device_mesh",
        false,
        "\"\"\"torch.distributed.device_mesh: the world as a one-dimensional mesh.\"\"\"\nfrom torch.distributed import DeviceMesh, init_device_mesh\n",
    ),
    (
        "torch.distributed.fsdp",
        false,
        include_str!("../py/torch/distributed/fsdp.py"),
    ),
    (
        "torch.distributed._composable",
        true,
        "\"\"\"torch.distributed._composable: where FSDP2 lived before torch.distributed.fsdp.\"\"\"\n",
    ),
    (
        "torch.distributed._composable.fsdp",
        false,
        "\"\"\"FSDP2 under its older import path.\"\"\"\nfrom torch.distributed.fsdp import *  # noqa: F401,F403\nfrom torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, OffloadPolicy, fully_shard\n",
    ),
    (
        "torch.nn.parallel",
        true,
        include_str!("../py/torch/nn/parallel/__init__.py"),
    ),
    (
        "torch.testing",
        true,
        "\"\"\"torch.testing: the fake process group's store.\"\"\"\n",
    ),
    ("torch.testing._internal", true, "\n"),
    ("torch.testing._internal.distributed", true, "\n"),
    (
        "torch.testing._internal.distributed.fake_pg",
        false,
        include_str!("../py/torch/testing/_internal/distributed/fake_pg.py"),
    ),
    ("torchlet", false, include_str!("../py/torchlet.py")),
    (
        "_torchlet_notebook",
        false,
        include_str!("../py/_torchlet_notebook.py"),
    ),
];

/// Names a folder laid out as `crates/python/py` whose sources replace the built-in ones: for working on
/// the package without rebuilding the binary.
pub const SOURCE_DIR_ENV: &str = "TORCHLET_PY_SOURCES";

/// The finder on `sys.meta_path` that imports `SOURCES` by name.
const FINDER: &str = r#"
import sys

class TorchletFinder:
    """Imports torchlet's own `torch` package, whose sources are part of the torchlet binary."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name not in SOURCES:
            return None
        from importlib.machinery import ModuleSpec
        is_package = SOURCES[name][0]
        origin = "/".join(name.split(".")) + ("/__init__.py" if is_package else ".py")
        spec = ModuleSpec(name, cls, origin=origin, is_package=is_package)
        return spec

    @classmethod
    def create_module(cls, spec):
        return None

    @classmethod
    def exec_module(cls, module):
        is_package, source = SOURCES[module.__name__]
        filename = "<torchlet>/" + module.__spec__.origin
        if SOURCE_DIR:
            # TORCHLET_PY_SOURCES names a checkout's crates/python/py: a change there runs without a rebuild.
            import os
            path = os.path.join(SOURCE_DIR, module.__spec__.origin)
            if os.path.exists(path):
                filename = path
                with open(path, encoding="utf-8") as f:
                    source = f.read()
        exec(compile(source, filename, "exec"), module.__dict__)

sys.meta_path.insert(0, TorchletFinder)
"#;

/// Register `torch._C` and the finder in a new interpreter.
pub(crate) fn install(vm: &VirtualMachine) -> PyResult<()> {
    let native = crate::native::module(vm)?;
    let modules = vm.sys_module.get_attr("modules", vm)?;
    modules.set_item(crate::native::MODULE_NAME, native.into(), vm)?;
    let sources = vm.ctx.new_dict();
    for &(name, is_package, source) in SOURCES {
        let entry = vm.ctx.new_tuple(vec![
            vm.ctx.new_bool(is_package).into(),
            vm.ctx.new_str(source).into(),
        ]);
        sources.set_item(name, entry.into(), vm)?;
    }
    let scope = vm.new_scope_with_builtins();
    scope.globals.set_item("SOURCES", sources.into(), vm)?;
    let source_dir = std::env::var(SOURCE_DIR_ENV).ok().filter(|d| !d.is_empty());
    let source_dir = match source_dir {
        Some(dir) => vm.ctx.new_str(dir).into(),
        None => vm.ctx.none(),
    };
    scope.globals.set_item("SOURCE_DIR", source_dir, vm)?;
    let code = vm
        .compile(
            FINDER,
            rustpython_vm::compiler::Mode::Exec,
            "<torchlet finder>".into(),
        )
        .map_err(|e| vm.new_syntax_error(&e, Some(FINDER)))?;
    vm.run_code_obj(code, scope)?;
    Ok(())
}
