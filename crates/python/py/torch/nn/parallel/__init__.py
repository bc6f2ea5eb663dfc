"""torch.nn.parallel: DistributedDataParallel, with the memory its Reducer takes on this rank.

Note [DDP's buckets]: PyTorch 2.11's DDP, measured at world size 1 on an H100 (its buckets do not
depend on the world size):
- construction first checks the parameters' shapes across ranks (`verify_params_across_processes`:
  an int64 count on the device, one per rank gathered, NCCL's flat gather buffer, then 2 int64 per
  dimension of every parameter on the device), then broadcasts the module's parameters and buffers
  from rank 0 through flat tensors of up to 250 MiB each (`_broadcast_coalesced`), made and freed in
  turn;
- the Reducer then allocates its buckets: with `find_unused_parameters=False` one bucket per dtype
  holding every gradient (size limit "unlimited": the real buckets come with the rebuild);
- backward copies gradients into the buckets and back: nothing new is allocated;
- the first forward after the first backward rebuilds the buckets in the order the gradients
  became ready (for a model that runs its layers in registration order, the reverse of
  `parameters()`): it broadcasts the bucket indices (int32, one per parameter plus one) and sizes
  (int32, one per bucket) from the device, frees them, and allocates the new buckets, the first
  closing at 1 MiB and the rest at `bucket_cap_mb`, once the first buckets are freed. PyTorch frees
  them there only if ProcessGroupNCCL has let go of the last all-reduce, which holds the bucket
  until its watchdog (a pass every 100 ms) sees it complete: in a program whose step is shorter,
  the first buckets outlive the rebuild and go when the watchdog gets to them, on its own thread.
  torchlet takes a real training step, longer than that; the parity programs sleep before the
  rebuilding forward, so that PyTorch's history is the same every run;
- with `gradient_as_bucket_view=True` each gradient, once accumulated, is copied into its bucket
  and `.grad` becomes a view of the bucket, so the gradient's own memory goes at once (a gradient
  that is already such a view stays); at the rebuild every gradient moves to the new buckets;
- with `find_unused_parameters=True` the buckets are made in parameter order (1 MiB first, then
  `bucket_cap_mb`), the last one first, and never rebuilt, and an int32 map of the parameters used
  follows them on the device.
"""

import contextlib
import functools
import math

import torch
import torch.distributed as dist
from torch.nn.modules import Module

# DDP's limits: the first bucket closes at 1 MiB (dist._DEFAULT_FIRST_BUCKET_BYTES), the others at
# bucket_cap_mb, and _broadcast_coalesced works in 250 MiB flats.
_FIRST_BUCKET_BYTES = 1024 * 1024
_BROADCAST_BUCKET_BYTES = 250 * 1024 * 1024


def _nbytes(t):
    return t.numel() * t.element_size()


def _verify_param_shape_across_processes(params):
    """verify_params_across_processes: the allocations it makes on this rank's device."""
    device = params[0].device
    count = torch.tensor([len(params)], dtype=torch.int64, device=device)
    gathered = [torch.empty_like(count) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, count)
    metadata = torch.empty(sum(2 * p.dim() for p in params), dtype=torch.int64, device=device)
    del metadata
    del gathered
    del count


def _broadcast_coalesced(tensors, buffer_size):
    """Flatten each group of up to `buffer_size` bytes (per dtype, as take_tensors groups them) into
    one tensor, broadcast it and drop it: rank 0 is the source, so nothing is copied back."""
    groups = {}
    for t in tensors:
        key = t.dtype
        group = groups.setdefault(key, [0, []])
        group[1].append(t)
        group[0] += _nbytes(t)
        if group[0] >= buffer_size:
            _flatten_and_drop(group[1])
            del groups[key]
    for _, members in groups.values():
        _flatten_and_drop(members)


def _flatten_and_drop(members):
    flat = torch.cat([m.detach().reshape(-1) for m in members])
    del flat


def _bucket_assignment(params, limits):
    """compute_bucket_assignment_by_size: params in order, a bucket per dtype closing once it holds
    at least its limit (the first limit for the first bucket, the last for the rest)."""
    buckets = []
    open_buckets = {}
    for index, p in enumerate(params):
        key = p.dtype
        bucket = open_buckets.setdefault(key, {"indices": [], "bytes": 0, "limit": limits[0]})
        bucket["indices"].append(index)
        bucket["bytes"] += _nbytes(p)
        if bucket["bytes"] >= bucket["limit"]:
            buckets.append(bucket)
            next_limit = limits[min(len(limits) - 1, limits.index(bucket["limit"]) + 1)]
            open_buckets[key] = {"indices": [], "bytes": 0, "limit": next_limit}
    buckets.extend(b for b in open_buckets.values() if b["indices"])
    return buckets


class DistributedDataParallel(Module):
    """DDP on this rank: forward runs the module; the Reducer's buckets take PyTorch's memory
    (Note [DDP's buckets]). Gradients are not averaged across ranks: there is one rank's data."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        if static_graph:
            raise NotImplementedError(
                "DistributedDataParallel(static_graph=True): torchlet's DDP does not have the static "
                "graph's Reducer; leave static_graph at False to see DDP's memory"
            )
        if mixed_precision is not None:
            raise NotImplementedError("DistributedDataParallel(mixed_precision=...) is not offered by torchlet")
        if not dist.is_initialized():
            raise ValueError(
                "Default process group has not been initialized, please make sure to call init_process_group."
            )
        self.module = module
        self.device_ids = device_ids
        self.broadcast_buffers = broadcast_buffers
        cap = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap * 1024 * 1024)
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient."
            )
        self._params = params
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        _verify_param_shape_across_processes(params)
        states = list(module.parameters()) + list(module.buffers())
        _broadcast_coalesced(states, _BROADCAST_BUCKET_BYTES)
        limits = [math.inf]
        if find_unused_parameters:
            limits = [_FIRST_BUCKET_BYTES, self.bucket_bytes_cap] if bucket_cap_mb is None else [self.bucket_bytes_cap]
        # Buckets in order of their first parameter, handed to the Reducer last first.
        assignment = sorted(_bucket_assignment(params, limits), key=lambda b: b["indices"][0], reverse=True)
        self._views = {}
        self._buckets = self._allocate(assignment, params)
        if find_unused_parameters:
            self._used_map = torch.empty(len(params), dtype=torch.int32, device=params[0].device)
        if gradient_as_bucket_view:
            for index, p in enumerate(params):
                p.register_post_accumulate_grad_hook(functools.partial(self._gradient_ready, index))
        self._rebuilt = False
        self._passes_at_forward = None
        self._sync = True

    def _allocate(self, assignment, params):
        """One flat gradient tensor per bucket, in bucket order, and each parameter's view of it;
        with gradient_as_bucket_view a gradient moves into its new view as each bucket is made."""
        buckets = []
        for b in assignment:
            members = [params[i] for i in b["indices"]]
            bucket = torch.empty(sum(p.numel() for p in members), dtype=members[0].dtype, device=members[0].device)
            offset = 0
            for p in members:
                view = bucket.narrow(0, offset, p.numel()).view(p.shape)
                self._views[id(p)] = view
                offset += p.numel()
                if self.gradient_as_bucket_view:
                    self._into_bucket(p, view)
            buckets.append(bucket)
        return buckets

    @staticmethod
    def _into_bucket(param, view):
        """The Reducer's copy of a gradient into its bucket view, which becomes the gradient."""
        grad = param.grad
        if grad is None or grad.untyped_storage().data_ptr() == view.untyped_storage().data_ptr():
            return
        view.copy_(grad)
        del grad
        param.grad = view

    def _gradient_ready(self, index, _param):
        """After parameter `index`'s gradient is accumulated (gradient_as_bucket_view): into the
        bucket, unless the backward runs under no_sync, where the Reducer expects no hooks."""
        if self._sync:
            param = self._params[index]
            self._into_bucket(param, self._views[id(param)])

    def _rebuild_buckets(self):
        """The Reducer's rebuild at the first forward after a backward (Note [DDP's buckets])."""
        ready = list(reversed(self._params))
        assignment = _bucket_assignment(ready, [_FIRST_BUCKET_BYTES, self.bucket_bytes_cap])
        device = ready[0].device
        indices = torch.empty(len(ready) + 1, dtype=torch.int32, device=device)
        sizes = torch.empty(len(assignment), dtype=torch.int32, device=device)
        del sizes
        del indices
        # The first buckets go before the new ones are made (Note [DDP's buckets]).
        self._buckets, self._views = None, {}
        self._buckets = self._allocate(assignment, ready)
        self._rebuilt = True

    def forward(self, *inputs, **kwargs):
        # A backward since the last forward with grad went through this model's graph: the
        # Reducer's hooks saw the gradients' order, so this forward rebuilds the buckets.
        # Under no_sync the Reducer expects no hooks (prepare_for_backward is skipped), so only a
        # backward of a forward outside it records the gradients' order.
        passes = torch._tensor._BACKWARD_PASSES[0]
        if torch.is_grad_enabled() and not self.find_unused_parameters:
            if not self._rebuilt and self._passes_at_forward is not None and passes > self._passes_at_forward:
                self._rebuild_buckets()
            if self._sync:
                self._passes_at_forward = passes
        output = self.module(*inputs, **kwargs)
        if self.find_unused_parameters:
            # Note [DDP's sink]: with find_unused_parameters every output tensor goes through
            # _DDPSink, which clones it (so that outputs left out of the loss get no gradient);
            # the clone of an output without a graph is dropped and the output kept.
            leaves, rebuild = _flatten(output)
            passed = _DDPSink.apply(*leaves)
            passed = passed if isinstance(passed, tuple) else (passed,)
            kept = [t if isinstance(t, torch.Tensor) and t.grad_fn is None else p for t, p in zip(leaves, passed)]
            del passed, leaves, output
            output = rebuild(kept)
        return output

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, gradients accumulate locally: no bucket copies, and its backward passes do not
        count for the rebuild."""
        previous, self._sync = self._sync, False
        try:
            yield
        finally:
            self._sync = previous


class _DDPSink(torch.autograd.Function):
    """DDP's pass-through for a model's outputs under find_unused_parameters: clones forward,
    hands gradients (None stays None) straight back."""

    @staticmethod
    def forward(ctx, *inputs):
        ctx.set_materialize_grads(False)
        return tuple(t.clone() if isinstance(t, torch.Tensor) else t for t in inputs)

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _flatten(value):
    """(leaves, rebuild): the leaves of nested tuples, lists and dicts, and the function that puts
    new leaves back in the same structure (pytree's flatten and unflatten)."""
    if isinstance(value, (tuple, list)):
        parts = [_flatten(v) for v in value]
        leaves = [leaf for part, _ in parts for leaf in part]

        def rebuild(new):
            items, at = [], 0
            for part, again in parts:
                items.append(again(new[at:at + len(part)]))
                at += len(part)
            return type(value)(items) if type(value) in (tuple, list) else type(value)(*items)

        return leaves, rebuild
    if isinstance(value, dict):
        keys = list(value)
        inner, again = _flatten([value[k] for k in keys])
        return inner, lambda new: dict(zip(keys, again(new)))
    return [value], lambda new: new[0]
