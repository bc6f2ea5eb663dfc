"""torch.distributed for one process: rank `rank` of a world of `world_size`, as PyTorch's fake
process group runs it, and `nccl`/`gloo` at world size 1.

torchlet runs one rank: the process group knows its rank and the world's size, and a collective
moves no data (the fake group's behaviour; at world size 1 NCCL's result is the input anyway). What a
collective allocates is what PyTorch's backend allocates on this rank: the fake group nothing,
NCCL a flat staging tensor where its outputs are a list (Note [collectives' buffers]).
"""

import math

import torch

# Note [collectives' buffers]: ProcessGroupNCCL gathers into a list of tensors through one flat
# tensor of the whole result (newLikeFlat), copied out and freed after the collective; into one
# tensor (all_gather_into_tensor) and in place (all_reduce, broadcast) it allocates nothing.
# PyTorch's FakeProcessGroup returns at once and allocates nothing.
_BACKENDS = ("nccl", "gloo", "fake", "cuda:nccl", "cpu:gloo,cuda:nccl")


class _ProcessGroup:
    def __init__(self, backend, rank, world_size):
        self.backend = backend
        self._rank = rank
        self._world_size = world_size

    def rank(self):
        return self._rank

    def size(self):
        return self._world_size

    def name(self):
        return self.backend


_WORLD = None


class ReduceOp:
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


class _Work:
    """A collective's handle: every collective here has completed when it returns."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


def is_available():
    return True


def is_initialized():
    return _WORLD is not None


def is_nccl_available():
    return True


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the world as `rank` of `world_size` (from RANK/WORLD_SIZE when not given)."""
    global _WORLD
    import os

    if _WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend = "nccl" if backend is None else str(backend)
    if backend not in _BACKENDS:
        raise ValueError(f"torchlet's torch.distributed runs the backends {', '.join(_BACKENDS)}; got {backend!r}")
    if world_size == -1:
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if rank == -1:
        rank = int(os.environ.get("RANK", "0"))
    fit_world = os.environ.get("TORCHLET_WORLD_SIZE")
    if fit_world is not None:
        # `torchlet fit --world-size N` runs the script as one rank of N, whatever its backend.
        world_size, rank = int(fit_world), int(os.environ.get("TORCHLET_RANK", "0"))
    elif backend != "fake" and world_size != 1:
        raise NotImplementedError(
            f"init_process_group({backend!r}, world_size={world_size}): torchlet runs one process, so "
            "a real backend runs at world size 1 only; for one rank's memory in a larger world use "
            "the fake group: init_process_group('fake', rank=0, world_size=N, store=FakeStore()) "
            "(from torch.testing._internal.distributed.fake_pg import FakeStore), or ask "
            "torchlet fit FILE --world-size N, which runs any backend as one rank of N"
        )
    if not 0 <= rank < world_size:
        raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {world_size - 1}]")
    _WORLD = _ProcessGroup(backend.split(":")[-1] if ":" in backend else backend, rank, world_size)


def destroy_process_group(group=None):
    global _WORLD
    _WORLD = None


def _group(group):
    if group is not None:
        return group
    if _WORLD is None:
        raise ValueError(
            "Default process group has not been initialized, please make sure to call init_process_group."
        )
    return _WORLD


def get_rank(group=None):
    return _group(group).rank()


def get_world_size(group=None):
    return _group(group).size()


def get_backend(group=None):
    return _group(group).backend


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False):
    world = _group(None)
    size = world.size() if ranks is None else len(ranks)
    return _ProcessGroup(backend or world.backend, 0 if ranks is None else list(ranks).index(world.rank()), size)


def barrier(group=None, async_op=False, device_ids=None):
    _group(group)
    return _Work() if async_op else None


def _done(group, async_op):
    _group(group)
    return _Work() if async_op else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    return _done(group, async_op)


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, async_op=False):
    return _done(group, async_op)


def broadcast(tensor, src=0, group=None, async_op=False):
    return _done(group, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    return _done(group, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    return _done(group, async_op)


def _nccl_flat(group, count, like, async_op):
    """Note [collectives' buffers]: NCCL passes a list of `count` tensors like `like` through one
    flat tensor of them all, freed when the collective is done; other backends allocate nothing."""
    if _group(group).backend == "nccl" and like.is_cuda:
        flat = torch.empty((count,) + tuple(like.shape), dtype=like.dtype, device=like.device)
        del flat
    return _Work() if async_op else None


def all_gather(tensor_list, tensor, group=None, async_op=False):
    return _nccl_flat(group, len(tensor_list), tensor, async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    return _nccl_flat(group, len(input_list), output, async_op)


class DeviceMesh:
    """A one-dimensional device mesh over the default group: this rank of `world_size`."""

    def __init__(self, device_type, mesh_shape, mesh_dim_names=None):
        if len(mesh_shape) != 1:
            raise NotImplementedError(
                f"torchlet: init_device_mesh with {len(mesh_shape)} dimensions (HSDP, tensor parallel) is not supported yet; use one"
            )
        self.device_type = device_type
        self.mesh_dim_names = mesh_dim_names
        self._size = mesh_shape[0]

    def size(self, mesh_dim=None):
        return self._size

    @property
    def ndim(self):
        return 1

    def get_rank(self):
        return get_rank()

    def get_local_rank(self, mesh_dim=None):
        return get_rank()

    def get_group(self, mesh_dim=None):
        return _group(None)

    def __repr__(self):
        return f"DeviceMesh('{self.device_type}', {list(range(self._size))})"


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None):
    """The world as a mesh (initialising the default group from RANK/WORLD_SIZE if needed)."""
    mesh_shape = tuple(mesh_shape)
    if _WORLD is None:
        init_process_group("nccl" if device_type == "cuda" else "gloo")
    if math.prod(mesh_shape) != get_world_size():
        raise RuntimeError(
            f"init_device_mesh: the mesh {mesh_shape} has {math.prod(mesh_shape)} devices but the world has {get_world_size()}"
        )
    return DeviceMesh(device_type, mesh_shape, mesh_dim_names)
