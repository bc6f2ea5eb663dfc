"""torch.testing._internal.distributed.fake_pg: the store PyTorch's fake process group is made with.

`dist.init_process_group("fake", rank=0, world_size=N, store=FakeStore())` runs one rank of a world of
N in one process: what FSDP2 and the collectives allocate on that rank, without the other ranks.
"""


class FakeStore:
    """A store that keeps nothing: the fake group needs one to start and never reads it."""

    def set(self, key, value):
        return None

    def get(self, key):
        return b""

    def add(self, key, amount):
        return 0

    def wait(self, keys, timeout=None):
        return None
