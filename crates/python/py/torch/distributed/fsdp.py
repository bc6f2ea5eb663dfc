"""torch.distributed.fsdp: FSDP2 (`fully_shard`) on this rank, with the memory PyTorch 2.11's FSDP2
takes, from `torch/distributed/fsdp/_fully_shard/` (param, param group, state, collectives).

Note [FSDP2's memory], per parameter group (one per `fully_shard` call), as recorded on an H100
(`tests/parity/py_fsdp2_mlp.py`):
- `fully_shard` keeps this rank's dim-0 chunk of each parameter in a zero-padded tensor of the first
  chunk's size (`new_zeros`); the unsharded parameters are freed, in order, as it returns;
- unsharding allocates the all-gather output (every rank's shards, flat) on the all-gather copy-in
  stream; its copy-out allocates the unsharded parameters on the current stream once (`torch.empty`,
  padded), later only gives their storage back (`untyped_storage().resize_`), and
  `split_with_sizes_copy` sends its kernel's metadata through a small int64 tensor
  (Note [FSDP2's kernel metadata]);
- in forward a group's all-gather output lives until the next group has copied its own out (the
  root's post-forward frees the last); in backward it goes as soon as its copy-out is done;
- resharding frees the unsharded parameters' storage (`resize_(0)`), also under autograd's saved
  tensors, which see the storage again when the next unshard gives it back; with
  `reshard_after_forward=N` (N dividing the world) forward keeps a copy of this rank's 1/N of each
  unsharded parameter instead, backward all-gathers over N ranks from it and frees it;
- backward unshards a group when its output's gradient arrives (a tensor hook) and prefetches the
  group that ran before it in forward; a group's post-backward runs when the gradient of its inputs
  is made (an autograd.Function on the inputs) or, for inputs that need none, in the final callback;
- post-backward takes the unsharded gradients, reshards, frees the previous reduce-scatter input,
  allocates this one on the current stream (`chunk_cat` with its metadata), frees the gradients (last
  first, the last one only when `foreach_reduce` returns: its loop variable holds it), and allocates
  the reduce-scatter output on the reduce-scatter stream; the sharded gradients are views of it;
- the final callback frees the last reduce-scatter input.
Collectives move no data: one rank's memory is what FSDP2 allocates (see torch.distributed).

Note [FSDP2's CPU offload] (`offload_policy=CPUOffloadPolicy()`, recorded on an H100,
`tests/parity/py_fsdp2_cpu_offload.py`): the module still moves to the GPU first; each padded shard
is made there and copied to the host (the device copy freed at once), so shards, their gradients
and the optimizer's state take no device memory. Each unshard copies every shard to the GPU on the
all-gather copy-in stream before the all-gather output is allocated; the copies go, last first,
as the all-gather is issued. Post-backward copies the sharded gradients to the host, so the
reduce-scatter output goes as `foreach_reduce` returns instead of living on as the gradients.
"""

import math

import torch
import torch.distributed as dist
from torch.nn.modules import Parameter

_IDLE, _FORWARD, _PRE_BACKWARD, _POST_BACKWARD = "IDLE", "FORWARD", "PRE_BACKWARD", "POST_BACKWARD"

# Note [FSDP2's kernel metadata]: on CUDA, split_with_sizes_copy (all-gather copy-out) and chunk_cat
# (reduce-scatter copy-in) pack their kernels' per-tensor metadata into one int64 device tensor,
# freed when the op returns (aten/src/ATen/native/cuda/TensorShape.cu): 4 entries per split, one
# more, and one per thread block for the copy-out; 6 per tensor, 2 more and one per block for
# chunk_cat. A block copies 2048 bytes (128 threads of 16 bytes), and the copy-out's
# blocks copy several chunks once the grid would pass twice the SMs' threads: torchlet takes the
# 132 SMs of an H100 SXM and an H200, which gives the recorded sizes.
_BYTES_PER_BLOCK = 2048
_MAX_BLOCKS = 132 * 2048 // 128 * 2


class MixedPrecisionPolicy:
    """FSDP2's mixed precision: parameters all-gathered in `param_dtype`, gradients reduced in
    `reduce_dtype`."""

    def __init__(self, param_dtype=None, reduce_dtype=None, output_dtype=None, cast_forward_inputs=True):
        self.param_dtype = param_dtype
        self.reduce_dtype = reduce_dtype
        self.output_dtype = output_dtype
        self.cast_forward_inputs = cast_forward_inputs


class OffloadPolicy:
    """No offloading: parameters, gradients and optimizer state stay on the GPU."""


class CPUOffloadPolicy(OffloadPolicy):
    """Shards, their gradients and the optimizer's state in host memory (Note [FSDP2's CPU offload])."""

    def __init__(self, pin_memory=True):
        self.pin_memory = pin_memory


def _div_up(a, b):
    return (a + b - 1) // b


def _metadata_scratch(device, count):
    """The int64 tensor a CUDA kernel's metadata goes through (Note [FSDP2's kernel metadata])."""
    if device.type == "cuda":
        scratch = torch.empty(count, dtype=torch.int64, device=device)
        del scratch


def _split_with_sizes_copy(source, split_sizes, out):
    """torch.split_with_sizes_copy(source, split_sizes, dim=1, out=out) for a [ws, N] source."""
    rows, element = source.shape[0], source.element_size()
    chunk_bytes = [s * element for s in split_sizes]
    blocks = sum(_div_up(b, _BYTES_PER_BLOCK) for b in chunk_bytes)
    factor = _div_up(blocks * rows, _MAX_BLOCKS)
    per_block = min(math.ceil(math.sqrt(factor)), rows)
    iterations = _div_up(factor, per_block)
    grid = sum(_div_up(b, _BYTES_PER_BLOCK * iterations) for b in chunk_bytes)
    _metadata_scratch(source.device, 4 * len(split_sizes) + 1 + grid)
    offset = 0
    for size, target in zip(split_sizes, out):
        target.copy_(source.narrow(1, offset, size))
        offset += size


def _chunk_cat(tensors, num_chunks, out):
    """torch._chunk_cat(tensors, dim=0, num_chunks, out=out): each tensor's dim 0 padded with zeros
    to a multiple of num_chunks, chunk i of every tensor side by side in row i of out. A few copies
    per tensor, whatever num_chunks is."""
    blocks = 0
    offset = 0
    for t in tensors:
        rows = t.shape[0]
        chunk_rows = _div_up(rows, num_chunks)
        row_numel = t.numel() // max(rows, 1)
        chunk_numel = chunk_rows * row_numel
        blocks += _div_up(chunk_numel * out.element_size(), _BYTES_PER_BLOCK)
        column = out.narrow(1, offset, chunk_numel)
        full = rows // chunk_rows if chunk_rows else 0
        if full:
            column.narrow(0, 0, full).copy_(t.narrow(0, 0, full * chunk_rows).reshape(full, chunk_numel))
        rest = rows - full * chunk_rows
        if full < num_chunks:
            tail = column.narrow(0, full, num_chunks - full)
            tail.zero_()
            if rest:
                tail[0].narrow(0, 0, rest * row_numel).copy_(t.narrow(0, full * chunk_rows, rest).reshape(-1))
        offset += chunk_numel
    _metadata_scratch(out.device, 6 * len(tensors) + 2 + blocks)


class _FSDPParam:
    """One parameter: its padded shard, and the unsharded parameter made from the all-gather."""

    def __init__(self, param, owners, rank, world_size, device, offload):
        self.owners = owners  # (module, name) of each place the parameter is registered
        name = owners[0][1]
        self.orig_size = tuple(param.shape)
        if not self.orig_size:
            raise NotImplementedError(f"torchlet: fully_shard of the 0-dim parameter {name!r} is not supported")
        rows = self.orig_size[0]
        chunk = _div_up(rows, world_size)
        self.padded_sharded_size = (chunk,) + self.orig_size[1:]
        length = max(0, min(chunk, rows - rank * chunk))
        self.sharded_size = (length,) + self.orig_size[1:]
        self.requires_grad = param.requires_grad
        # A meta parameter is sharded on meta, made on the device by to_empty (Note [meta device]).
        where = param.device if param.is_meta else device
        padded = torch.zeros(self.padded_sharded_size, dtype=param.dtype, device=where)
        if length > 0:
            padded.narrow(0, 0, length).copy_(param.detach().narrow(0, rank * chunk, length))
        if offload and not padded.is_meta:
            padded = padded.cpu()
        self.sharded_param_data = padded.view(-1)
        self.sharded_param = Parameter(padded.narrow(0, 0, length), requires_grad=param.requires_grad)
        # PyTorch's shard is a DTensor on the mesh's device (Note [FSDP2's shards are DTensors]).
        self.sharded_param._dtensor_device = device
        self.all_gather_outputs = []
        self.unsharded_param = None
        # The gradients of backwards without sync, cast to the reduce dtype (when there is one).
        self.unsharded_accumulated_grad = None
        self.post_forward_data = None
        self.set_on_module(self.sharded_param)

    def set_on_module(self, param):
        for module, name in self.owners:
            module._parameters[name] = param

    def reset_sharded_param(self):
        """After `Module._apply` gave the shard new data (`to_empty`), pad it again to the padded
        shard size when it is shorter, as FSDP2's `reset_sharded_param` does: the padded shard is
        allocated, the data copied, and the unpadded one freed (Note [meta device])."""
        param = self.owners[0][0]._parameters[self.owners[0][1]]
        self.sharded_param = param
        if param.is_meta:
            return
        if tuple(param.shape) == self.padded_sharded_size:
            self.sharded_param_data = param.detach().view(-1)
            return
        length = param.size(0) if param.numel() > 0 else 0
        padded = param.new_zeros(self.padded_sharded_size)
        padded.narrow(0, 0, length).copy_(param.detach())
        self.sharded_param_data = padded.view(-1)
        torch._C._set_data(param, padded.narrow(0, 0, length))

    def init_all_gather_outputs(self, numel, dtype, world_size, device):
        if not self.all_gather_outputs:
            self.all_gather_outputs = [torch.empty(numel * world_size, dtype=dtype, device=device)]

    def alloc_all_gather_outputs(self):
        for t in self.all_gather_outputs:
            nbytes = t.numel() * t.element_size()
            if t.untyped_storage().size() != nbytes:
                t.untyped_storage().resize_(nbytes)

    def free_unsharded_param(self):
        for t in self.all_gather_outputs:
            t.untyped_storage().resize_(0)

    def init_unsharded_param(self):
        if self.unsharded_param is not None:
            return
        numel = math.prod(self.orig_size)
        data = self.all_gather_outputs[0].narrow(0, 0, numel).view(self.orig_size)
        self.unsharded_param = Parameter(data, requires_grad=self.requires_grad)

    def to_accumulated_grad_if_needed(self, reduce_dtype):
        """Without sync, a gradient not yet in the reduce dtype is kept cast to it."""
        grad = self.unsharded_param.grad if self.unsharded_param is not None else None
        if reduce_dtype is None or grad is None or grad.dtype == reduce_dtype:
            return
        self.unsharded_param.grad = None
        self.unsharded_accumulated_grad = grad.to(reduce_dtype)

    def accumulate_unsharded_grad_if_needed(self):
        """A later backward's gradient, added to the one kept cast."""
        if self.unsharded_accumulated_grad is not None and self.unsharded_param.grad is not None:
            self.unsharded_accumulated_grad += self.unsharded_param.grad
            self.unsharded_param.grad = None

    def to_unsharded(self):
        self.set_on_module(self.unsharded_param)
        self.post_forward_data = None

    def to_sharded(self):
        self.set_on_module(self.sharded_param)
        self.free_unsharded_param()

    def to_sharded_post_forward(self, world, rank):
        """Keep this rank's 1/world of the unsharded parameter (a copy, so that the all-gather
        output can go) and free the rest, as `reshard_after_forward=world` does."""
        shard = self.all_gather_outputs[0].numel() // world
        self.post_forward_data = self.all_gather_outputs[0].narrow(0, shard * rank, shard).clone()
        rows = self.orig_size[0]
        chunk = _div_up(rows, world)
        length = max(0, min(chunk, rows - rank * chunk))
        size = (length,) + self.orig_size[1:]
        view = self.post_forward_data.narrow(0, 0, math.prod(size)).view(size)
        self.set_on_module(Parameter(view, requires_grad=self.requires_grad))
        self.free_unsharded_param()


class _CommContext:
    """What the groups of one root share: the streams, the all-gather and reduce-scatter states
    that keep buffers alive across groups, and the post-forward order for backward prefetching."""

    def __init__(self):
        self.streams = None
        self.all_gather_state = None
        self.reduce_scatter_state = None
        self.post_forward_order = []

    def lazy_init(self, device):
        if self.streams is None and device.type == "cuda":
            # all-gather copy-in, all-gather, reduce-scatter and all-reduce, made in PyTorch's order
            self.streams = [torch.cuda.Stream(priority=-1) for _ in range(3)] + [torch.cuda.Stream()]

    def all_gather_streams(self, training_state):
        current = torch.cuda.current_stream() if self.streams else None
        if self.streams and training_state in (_FORWARD, _PRE_BACKWARD):
            return self.streams[0], self.streams[1]
        return current, current

    def reduce_scatter_stream(self):
        return self.streams[2] if self.streams else None


def _on_stream(stream):
    """`torch.cuda.stream(stream)`, or nothing on the CPU."""
    return torch.cuda.stream(stream) if stream is not None else _Nothing()


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _FSDPParamGroup:
    """The parameters one `fully_shard` call manages, communicated together (Note [FSDP2's memory])."""

    def __init__(self, params, owners, rank, world_size, device, mp_policy, offload):
        self.rank, self.world_size, self.device, self.mp_policy = rank, world_size, device, mp_policy
        self.offload = offload
        self.fsdp_params = [_FSDPParam(p, o, rank, world_size, device, offload) for p, o in zip(params, owners)]
        self.comm = _CommContext()
        self.training_state = _IDLE
        self.unsharded = False
        # True, False, or the world size to reshard to after forward (Note [FSDP2's memory]).
        self.reshard_after_forward = True
        self.sharded_post_forward = False
        self.reshard_after_backward = True
        # Off (set_requires_gradient_sync(False)): post-backward keeps the unsharded gradients.
        self.reduce_grads = True
        self.all_gather_result = None
        self.post_forward_indices = []
        # init_dtype_attrs: no cast where the dtype is already the one asked for.
        self.orig_dtype = self.fsdp_params[0].sharded_param.dtype
        self.param_dtype, self.reduce_dtype = mp_policy.param_dtype, mp_policy.reduce_dtype
        if self.reduce_dtype == self.param_dtype:
            self.reduce_dtype = None
        if self.param_dtype == self.orig_dtype:
            self.param_dtype = None

    # Unsharding.
    def _gather_world(self):
        """(world size, rank) of the all-gather: the post-forward group's after a reshard to it."""
        if self.sharded_post_forward:
            world = self.reshard_after_forward
            return world, self.rank % world
        return self.world_size, self.rank

    def unshard(self):
        if self.all_gather_result is not None or self.unsharded:
            return
        world, rank = self._gather_world()
        if world == 1 and not self.sharded_post_forward:
            self.all_gather_result = ("local",)
            return
        copy_in, gather = self.comm.all_gather_streams(self.training_state)
        with _on_stream(copy_in):
            inputs = self._all_gather_inputs()
            split_sizes = [t.numel() for t in inputs]
            numel = sum(split_sizes)
            output = torch.empty(numel * world, dtype=inputs[0].dtype, device=self.device)
            mine = output.narrow(0, numel * rank, numel)
            offset = 0
            for t in inputs:
                mine.narrow(0, offset, t.numel()).copy_(t)
                offset += t.numel()
            # PyTorch's list of inputs goes as foreach_all_gather returns, last first.
            del t, inputs
        if gather is not None:
            gather.wait_stream(copy_in)
        with _on_stream(gather):
            dist.all_gather_into_tensor(output, mine)
        self.all_gather_result = (output, split_sizes, world)

    def _all_gather_inputs(self):
        sources = [p.post_forward_data if self.sharded_post_forward else p.sharded_param_data for p in self.fsdp_params]
        if self.offload:
            # Note [FSDP2's CPU offload]: each shard is copied to the GPU, on the copy-in stream.
            return [t.to(self.device, non_blocking=True) for t in sources]
        if self.param_dtype is None:
            return sources
        # Parameters cast for the all-gather: one flat tensor, split (foreach copy).
        numels = [t.numel() for t in sources]
        flat = torch.empty(sum(numels), dtype=self.param_dtype, device=self.device)
        splits = torch.split(flat, numels)
        for split, t in zip(splits, sources):
            split.copy_(t)
        return list(splits)

    def wait_for_unshard(self):
        result = self.all_gather_result
        if result is None:
            return
        if isinstance(result[0], str):  # world size 1: the shards are copied, not gathered
            for p in self.fsdp_params:
                if not p.all_gather_outputs:
                    dtype = self.param_dtype or p.sharded_param_data.dtype
                    p.all_gather_outputs = [torch.empty_like(p.sharded_param_data, dtype=dtype, device=self.device)]
                p.alloc_all_gather_outputs()
                with torch.autograd._unsafe_preserve_version_counter(p.all_gather_outputs):
                    p.all_gather_outputs[0].copy_(p.sharded_param_data)
        else:
            output, split_sizes, world = result
            dtype = output.dtype
            for p, numel in zip(self.fsdp_params, split_sizes):
                p.init_all_gather_outputs(numel, dtype, world, self.device)
                p.alloc_all_gather_outputs()
            out = [p.all_gather_outputs[0].view(world, -1) for p in self.fsdp_params]
            with torch.autograd._unsafe_preserve_version_counter(out):
                _split_with_sizes_copy(output.view(world, -1), split_sizes, out)
            del out, output
        for p in self.fsdp_params:
            p.init_unsharded_param()
            p.to_unsharded()
        self.unsharded, self.sharded_post_forward = True, False
        if self.world_size > 1 and self.training_state == _FORWARD:
            # Kept until the next group's copy-out: the previous group's output goes now.
            self.comm.all_gather_state = result
        del result
        self.all_gather_result = None

    def reshard(self):
        if self.training_state == _FORWARD:
            if self.reshard_after_forward is False:
                return
            if self.reshard_after_forward is not True and self.unsharded:
                world = self.reshard_after_forward
                for p in self.fsdp_params:
                    p.to_sharded_post_forward(world, self.rank % world)
                self.unsharded, self.sharded_post_forward = False, True
                return
        if self.unsharded:
            for p in self.fsdp_params:
                p.to_sharded()
            self.unsharded = False

    # Forward.
    def pre_forward(self, module, args, kwargs):
        self.training_state = _FORWARD
        self.unshard()
        self.wait_for_unshard()
        return self._register_post_backward_hook(args, kwargs)

    def post_forward(self, module, inputs, output):
        self.reshard()
        self.post_forward_indices.append(len(self.comm.post_forward_order))
        self.comm.post_forward_order.append(self)
        self.training_state = _IDLE
        return output

    def _register_post_backward_hook(self, args, kwargs):
        if not torch.is_grad_enabled():
            return args, kwargs
        flat = list(args) + list(kwargs.values())
        indices = [i for i, x in enumerate(flat) if isinstance(x, torch.Tensor) and x.requires_grad]
        if not indices:
            return args, kwargs
        made = _RegisterPostBackwardFunction.apply(self, *[flat[i] for i in indices])
        made = made if isinstance(made, tuple) else (made,)
        for i, t in zip(indices, made):
            flat[i] = t
        args = tuple(flat[: len(args)])
        kwargs = dict(zip(kwargs.keys(), flat[len(args):]))
        return args, kwargs

    # Backward.
    def pre_backward(self, default_prefetch):
        if self.training_state == _PRE_BACKWARD:
            return
        self.training_state = _PRE_BACKWARD
        self.unshard()
        self.wait_for_unshard()
        if default_prefetch:
            self._backward_prefetch()

    def _backward_prefetch(self):
        if not self.post_forward_indices:
            return
        target_index = self.post_forward_indices.pop() - 1
        if target_index < 0:
            return
        target = self.comm.post_forward_order[target_index]
        previous, target.training_state = target.training_state, _PRE_BACKWARD
        try:
            target.unshard()
        finally:
            target.training_state = previous

    def post_backward(self):
        self.training_state = _POST_BACKWARD
        for p in self.fsdp_params:
            p.accumulate_unsharded_grad_if_needed()
        if not self.reduce_grads:
            # Note [FSDP2's gradient accumulation]: without sync the unsharded gradients stay on
            # the unsharded parameters (which survive the reshard: only their storage goes), and
            # the next backward accumulates into them; with a reduce dtype they are kept cast.
            if self.reshard_after_backward:
                self.reshard()
            for p in self.fsdp_params:
                p.to_accumulated_grad_if_needed(self.reduce_dtype)
            return
        with_grad, grads = [], []
        for p in self.fsdp_params:
            if p.unsharded_accumulated_grad is not None:
                with_grad.append(p)
                grads.append(p.unsharded_accumulated_grad)
                p.unsharded_accumulated_grad = None
            elif p.unsharded_param is not None and p.unsharded_param.grad is not None:
                with_grad.append(p)
                grads.append(p.unsharded_param.grad)
                p.unsharded_param.grad = None
        if self.reshard_after_backward:
            self.reshard()
        if not grads:
            return
        self.comm.reduce_scatter_state = None
        self.comm.reduce_scatter_state = self._foreach_reduce(with_grad, grads)

    def _foreach_reduce(self, params, grads):
        """Reduce-scatter the unsharded gradients; the sharded ones become views of the output."""
        ws = self.world_size
        grad_dtype = grads[0].dtype
        reduce_dtype = self.reduce_dtype or grad_dtype
        padded = [_div_up(g.shape[0], ws) * ws * (g.numel() // max(g.shape[0], 1)) for g in grads]
        rs_input = torch.empty(sum(padded), dtype=reduce_dtype, device=self.device)
        _chunk_cat(grads, ws, rs_input.view(ws, -1))
        # PyTorch's loop over the gradients leaves its variable on the last one until it returns.
        last = grads[-1] if ws > 1 else None
        while grads:
            grads.pop()
        stream = self.comm.reduce_scatter_stream()
        if stream is not None:
            stream.wait_stream(torch.cuda.current_stream())
        with _on_stream(stream):
            reduce_output = torch.empty(sum(padded) // ws, dtype=reduce_dtype, device=self.device)
            if ws > 1:
                dist.reduce_scatter_tensor(reduce_output, rs_input)
            else:
                reduce_output.copy_(rs_input)
            grad_output = reduce_output
            if reduce_dtype != self.orig_dtype:
                grad_output = reduce_output.to(self.orig_dtype)
            offset = 0
            for numel, p in zip(padded, params):
                size = math.prod(p.sharded_size)
                grad = grad_output.narrow(0, offset, size).view(p.sharded_size)
                if self.offload:
                    grad = grad.to("cpu", non_blocking=True)
                if p.sharded_param.grad is not None:
                    p.sharded_param.grad += grad
                else:
                    p.sharded_param.grad = grad
                offset += numel // ws
        # As foreach_reduce's frame goes: the last gradient, then the reduce-dtype output.
        del last, grad, reduce_output, grad_output
        return rs_input

    def finalize_backward(self):
        self.all_gather_result = None
        self.post_forward_indices.clear()


class _RegisterPostBackwardFunction(torch.autograd.Function):
    """Runs the group's post-backward when the gradients of its forward's inputs are made."""

    @staticmethod
    def forward(ctx, group, *inputs):
        ctx.group = group
        return inputs

    @staticmethod
    def backward(ctx, *grads):
        ctx.group.post_backward()
        return (None,) + grads


class _StateContext:
    def __init__(self):
        self.all_states = []
        self.iter_forward_root = None
        self.callback_queued = False


class _FSDPState:
    """One `fully_shard` call: its module's hooks and its parameter group."""

    def __init__(self, module, group, mp_policy, explicit_reshard):
        self.module, self.group, self.mp_policy = module, group, mp_policy
        self.explicit_reshard = explicit_reshard
        self.is_root = None
        self.ctx = _StateContext()
        self.comm = group.comm if group is not None else _CommContext()
        self.training_state = _IDLE
        self.device = group.device if group is not None else None
        module.register_forward_pre_hook(self._pre_forward, prepend=True, with_kwargs=True)
        module.register_forward_hook(self._post_forward)

    def _lazy_init(self):
        if self.is_root is not None:
            return
        _validate_no_meta_params(self.module)
        self.is_root = True
        for module in self.module.modules():
            state = module.__dict__.get("_fsdp_state")
            if state is None:
                continue
            if state is not self:
                state.is_root = False
            if state not in self.ctx.all_states:
                self.ctx.all_states.append(state)
        if self.group is not None and not self.explicit_reshard:
            # The root's parameters would be gathered again at once for backward.
            self.group.reshard_after_forward = False
        device = next((s.device for s in self.ctx.all_states if s.device is not None), None)
        if device is not None:
            self.comm.lazy_init(device)
        for state in self.ctx.all_states:
            state.ctx, state.comm = self.ctx, self.comm
            if state.group is not None:
                state.group.comm = self.comm

    def _pre_forward(self, module, args, kwargs):
        if self.training_state == _PRE_BACKWARD:
            return args, kwargs
        self.training_state = _FORWARD
        self._lazy_init()
        if self.ctx.iter_forward_root is None:
            self.ctx.iter_forward_root = self
            if self.comm.streams:
                current = torch.cuda.current_stream()
                self.comm.streams[0].wait_stream(current)
                self.comm.streams[1].wait_stream(current)
        if self.mp_policy.param_dtype is not None and self.mp_policy.cast_forward_inputs:
            args = _cast(args, self.mp_policy.param_dtype)
            kwargs = _cast(kwargs, self.mp_policy.param_dtype)
        if self.group is not None:
            args, kwargs = self.group.pre_forward(module, args, kwargs)
        return args, kwargs

    def _post_forward(self, module, inputs, output):
        if self.training_state == _PRE_BACKWARD:
            return output
        if self.group is not None:
            output = self.group.post_forward(module, inputs, output)
        if torch.is_grad_enabled():
            for t in _tensors(output):
                if t.requires_grad:
                    t.register_hook(self._pre_backward)
        self.training_state = _IDLE
        if self.ctx.iter_forward_root is self:
            # The last group's all-gather output (Note [FSDP2's memory]).
            self.comm.all_gather_state = None
            self.ctx.iter_forward_root = None
        if self.mp_policy.output_dtype is not None:
            output = _cast(output, self.mp_policy.output_dtype)
        return output

    def _pre_backward(self, grad):
        self.training_state = _PRE_BACKWARD
        if not self.ctx.callback_queued:
            self.ctx.callback_queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._root_post_backward_final_callback)
        if self.group is not None:
            self.group.pre_backward(True)
        return None

    def _root_post_backward_final_callback(self):
        for state in self.ctx.all_states:
            group = state.group
            if group is not None:
                if group.training_state != _POST_BACKWARD:
                    # Its inputs needed no gradient, so autograd never ran its post-backward.
                    group.post_backward()
                group.training_state = _IDLE
                group.finalize_backward()
            state.training_state = _IDLE
        self.comm.post_forward_order.clear()
        self.comm.reduce_scatter_state = None
        self.ctx.callback_queued = False


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _cast(value, dtype):
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, tuple):
        return tuple(_cast(v, dtype) for v in value)
    if isinstance(value, list):
        return [_cast(v, dtype) for v in value]
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    return value


# Note [FSDP2's shards are DTensors]: PyTorch's sharded parameters are DTensors, and two of
# DTensor's mechanisms allocate device memory that FSDP2's own code does not name:
# - random ops (nn.init's uniform_, normal_, trunc_normal_, ...) run through DTensor's RNG tracker
#   (torch/distributed/tensor/_random.py): the first one makes an OffsetBasedRNGTracker, which
#   copies the generator's 16-byte state to the device twice (`get_rng_state().to(device)`) and
#   compares the copies (a 16-byte bool tensor, freed first; the copies go as its __init__
#   returns); every random op then copies the state to the device once more, freed at once;
# - an op that makes a CUDA tensor from a meta one (`to_empty`'s `empty_like(t, device=...)`) runs
#   its sharding propagation on FakeTensors, and a FakeTensor's device gets PyTorch's
#   `init_gpu_context`, `torch.empty(1, device=device)` made and freed, once per device object
#   of the process: the device as given ("cuda") and as indexed ("cuda:0").
# Both as recorded on an H100 (tests/parity/py_fsdp2_meta_init.py).
class _RNGTracker:
    def __init__(self):
        self.ready = False

    def before_random_op(self, device):
        if not self.ready:
            self.ready = True
            rng_state = _rng_state_on(device)
            my_rng_state = _rng_state_on(device)
            same = my_rng_state == rng_state
            del same
            del rng_state, my_rng_state
        _rng_state_on(device)


def _rng_state_on(device):
    return torch.empty(16, dtype=torch.uint8, device=device)


_rng_tracker = _RNGTracker()
_fake_gpu_contexts = set()


def _dtensor_random_op(t):
    """Called by a tensor's random op before it runs: DTensor's RNG tracker's device memory."""
    device = t.__dict__.get("_dtensor_device")
    if device is not None and device.type == "cuda" and not t.is_meta:
        _rng_tracker.before_random_op(device)


def _fake_gpu_context(device):
    given = torch.device(device)
    if given.type != "cuda":
        return
    indexed = torch.device("cuda", given.index if given.index is not None else torch.cuda.current_device())
    for d in (given, indexed):
        if repr(d) not in _fake_gpu_contexts:
            _fake_gpu_contexts.add(repr(d))
            torch.empty(1, device=d)


def _validate_no_meta_params(root):
    on_meta = [name for name, p in root.named_parameters() if p.is_meta]
    if on_meta:
        raise RuntimeError(
            "FSDP parameters should be materialized from meta device before training, "
            f"but the following were still on meta device: {on_meta}\n"
            "For example, call module.to_empty(device) to materialize to device and "
            "call module.reset_parameters() on each module to initialize values."
        )


class FSDPModule:
    """The class `fully_shard` gives a module: FSDP2's module methods."""

    def to_empty(self, *, device, recurse=True):
        def make(t):
            if t.is_meta and "_dtensor_device" in t.__dict__:
                _fake_gpu_context(device)
            return torch.empty_like(t, device=device)

        return self._apply(make, recurse=recurse)

    def _apply(self, *args, **kwargs):
        # The sharded parameters are the registered ones while the function runs; a shard it
        # made anew is padded again after (Note [meta device]).
        self.reshard()
        ret = super()._apply(*args, **kwargs)
        group = self._fsdp_state.group
        if group is not None:
            with torch.no_grad():
                for fsdp_param in group.fsdp_params:
                    fsdp_param.reset_sharded_param()
        return ret

    def reshard(self):
        group = self._fsdp_state.group
        if group is not None:
            group.reshard()

    def unshard(self, async_op=False):
        group = self._fsdp_state.group
        if group is not None:
            self._fsdp_state._lazy_init()
            group.unshard()
            group.wait_for_unshard()

    def set_reshard_after_forward(self, reshard_after_forward, recurse=True):
        for module in (self.modules() if recurse else [self]):
            state = module.__dict__.get("_fsdp_state")
            if state is not None and state.group is not None:
                group = state.group
                group.reshard_after_forward = _reshard_setting(reshard_after_forward, group.world_size)

    def set_reshard_after_backward(self, reshard_after_backward, *, recurse=True):
        for module in (self.modules() if recurse else [self]):
            state = module.__dict__.get("_fsdp_state")
            if state is not None and state.group is not None:
                state.group.reshard_after_backward = bool(reshard_after_backward)

    def set_requires_gradient_sync(self, requires_gradient_sync, *, recurse=True):
        """Off, backward keeps the unsharded gradients (summed over backwards) and reduce-scatters
        nothing until a backward with it on: gradient accumulation without communication."""
        for module in (self.modules() if recurse else [self]):
            state = module.__dict__.get("_fsdp_state")
            if state is not None and state.group is not None:
                state.group.reduce_grads = bool(requires_gradient_sync)


_FSDP_CLASSES = {}


def _reshard_setting(value, world_size):
    """reshard_after_forward as the group keeps it: True, False, or a smaller world size to
    reshard to after forward (the world's own size is True)."""
    if isinstance(value, bool):
        return value
    if not isinstance(value, int) or value < 1 or world_size % value != 0:
        raise ValueError(
            f"reshard_after_forward should be a bool or an int in [1, {world_size}] that divides the "
            f"world size {world_size}, got {value!r}"
        )
    return True if value == world_size else value


def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy=MixedPrecisionPolicy(), offload_policy=OffloadPolicy(), ignored_params=None):
    """Shard `module`'s parameters (those no inner fully_shard took) over the world's ranks along
    dim 0; forward and backward gather them for the module's use (Note [FSDP2's memory])."""
    if isinstance(module, (list, tuple)):
        raise NotImplementedError("torchlet: fully_shard of a list of modules is not supported yet")
    if shard_placement_fn is not None or ignored_params:
        raise NotImplementedError("torchlet: fully_shard(shard_placement_fn=..., ignored_params=...) is not supported yet")
    offload = isinstance(offload_policy, CPUOffloadPolicy)
    if offload and mp_policy.param_dtype is not None:
        raise NotImplementedError(
            "torchlet: fully_shard(offload_policy=CPUOffloadPolicy(), mp_policy=MixedPrecisionPolicy(param_dtype=...)) "
            "is not supported yet; offload without param_dtype, or keep the shards on the GPU"
        )
    if mesh is None:
        if not dist.is_initialized():
            raise ValueError("fully_shard needs a process group: call torch.distributed.init_process_group first")
        rank, world_size, device_type = dist.get_rank(), dist.get_world_size(), "cuda"
    else:
        rank, world_size, device_type = mesh.get_rank(), mesh.size(), mesh.device_type
    device = torch.device(device_type, torch.cuda.current_device()) if device_type == "cuda" else torch.device("cpu")
    owners = _managed_params(module)
    _move_to(module, device)
    params = [places[0][0]._parameters[places[0][1]] for places in owners]
    group = _FSDPParamGroup(params, owners, rank, world_size, device, mp_policy, offload) if params else None
    if group is not None and reshard_after_forward is not None:
        group.reshard_after_forward = _reshard_setting(reshard_after_forward, world_size)
    # The unsharded parameters go as fully_shard returns, first to last.
    for i in range(len(params)):
        params[i] = None
    state = _FSDPState(module, group, mp_policy, reshard_after_forward is not None)
    object.__setattr__(module, "_fsdp_state", state)
    cls = type(module)
    if not issubclass(cls, FSDPModule):
        fsdp_cls = _FSDP_CLASSES.get(cls)
        if fsdp_cls is None:
            fsdp_cls = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
            _FSDP_CLASSES[cls] = fsdp_cls
        module.__class__ = fsdp_cls
    return module


def _managed_params(module):
    """Where each parameter of `module`'s tree that no inner fully_shard manages is registered, in
    order: a list of (module, name) per parameter, shared ones once with every place (no parameter
    is held past the call)."""
    owners, index = [], {}
    stack = [(module, True)]
    while stack:
        m, top = stack.pop()
        if not top and "_fsdp_state" in m.__dict__:
            continue
        for name, p in m._parameters.items():
            if p is None:
                continue
            if id(p) in index:
                owners[index[id(p)]].append((m, name))
            else:
                index[id(p)] = len(owners)
                owners.append([(m, name)])
        stack.extend((child, False) for child in reversed(list(m._modules.values())) if child is not None)
    return owners


def _managed_modules(module):
    """`module` and its submodules that no inner fully_shard took (their states are its own)."""
    found, stack = [], [(module, True)]
    while stack:
        m, top = stack.pop()
        if not top and "_fsdp_state" in m.__dict__:
            continue
        found.append(m)
        stack.extend((child, False) for child in reversed(list(m._modules.values())) if child is not None)
    return found


def _move_to(module, device):
    """fully_shard's move of the module's states to the mesh's device (those not there yet; a
    shared parameter stays shared)."""
    moved = {}
    for m in _managed_modules(module):
        for name, p in list(m._parameters.items()):
            # Meta parameters stay on meta, for to_empty to make (Note [meta device]).
            if p is not None and p.device != device and not p.is_meta:
                if id(p) not in moved:
                    moved[id(p)] = Parameter(p.detach().to(device), requires_grad=p.requires_grad)
                m._parameters[name] = moved[id(p)]
        for name, b in list(m._buffers.items()):
            if b is not None and b.device != device and not b.is_meta:
                m._buffers[name] = b.to(device)


class FullyShardedDataParallel:
    """FSDP1's wrapper: refused by name, with FSDP2's call that takes its place."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "torch.distributed.fsdp.FullyShardedDataParallel (FSDP1) is not offered by torchlet; "
            "FSDP2 is: fully_shard(layer) for each block, then fully_shard(model)"
        )


__all__ = ["fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy",
           "FullyShardedDataParallel"]
