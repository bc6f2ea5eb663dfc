"""torch.distributed.fsdp: FSDP2 (`fully_shard`) is not offered yet; it says so by name."""


def fully_shard(module, *args, **kwargs):
    raise NotImplementedError(
        "torch.distributed.fsdp.fully_shard: torchlet does not run FSDP2 yet, so it cannot show its "
        "shards, all-gather and reduce-scatter buffers; DistributedDataParallel and the collectives run"
    )


class MixedPrecisionPolicy:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.distributed.fsdp.MixedPrecisionPolicy: FSDP2 is not offered by torchlet yet")

