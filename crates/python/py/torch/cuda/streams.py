"""torch.cuda's streams and events, over torchlet's allocator.

A stream is what the allocator keeps blocks by: a block freed on one stream is reused only there,
and a block used on another stream (`Tensor.record_stream`) returns to its pool only after that
stream's work. torchlet runs every kernel in order on one queue, so events are always complete
when asked and work on two streams never overlaps: the memory is PyTorch's, the timing is not
modelled.
"""

import sys

import torch

_C = sys.modules["torch._C"]


def _device_index(device):
    if device is None:
        return torch.cuda.current_device()
    if isinstance(device, int):
        return device
    d = torch.device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return torch.cuda.current_device() if d.index is None else d.index


class Stream:
    """torch.cuda.Stream(device=None, priority=0): a new stream of a CUDA device."""

    def __init__(self, device=None, priority=0, *, stream_id=None):
        self.device_index = _device_index(device)
        self.priority = priority
        self.cuda_stream = _C._cuda_new_stream() if stream_id is None else stream_id
        self._entered = []

    @property
    def device(self):
        return torch.device("cuda", self.device_index)

    device_type = 1  # DeviceType::CUDA, as torch.cuda.Stream reports it

    def wait_stream(self, stream):
        """Later work on this stream waits for `stream`'s work so far (always done here)."""
        return None

    def wait_event(self, event):
        """Later work on this stream waits for `event` (always complete here)."""
        return None

    def record_event(self, event=None):
        """Record `event` (a new Event when None) on this stream and return it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self):
        """Whether all work on this stream is done: always, as torchlet runs it in order."""
        return True

    def synchronize(self):
        return None

    def __enter__(self):
        self._entered.append(_C._cuda_set_stream(self.device_index, self.cuda_stream))
        return self

    def __exit__(self, *exc):
        _C._cuda_set_stream(self.device_index, self._entered.pop())
        return False

    def __eq__(self, other):
        return (
            isinstance(other, Stream)
            and self.cuda_stream == other.cuda_stream
            and self.device_index == other.device_index
        )

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return f"<torch.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """torch.cuda.Event(enable_timing=False, blocking=False, interprocess=False)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.interprocess = interprocess
        self._recorded = False

    def record(self, stream=None):
        self._recorded = True

    def wait(self, stream=None):
        return None

    def query(self):
        return True

    def synchronize(self):
        return None

    def elapsed_time(self, end_event):
        raise RuntimeError(
            "torch.cuda.Event.elapsed_time: torchlet does not time GPU work (it reproduces "
            "memory, not kernel durations); time a region with time.perf_counter() around "
            "torch.cuda.synchronize() instead, or run the program under PyTorch"
        )

    def __repr__(self):
        return "<torch.cuda.Event>" if self._recorded else "<torch.cuda.Event uninitialized>"


def current_stream(device=None):
    """The stream work on `device` goes to now."""
    index = _device_index(device)
    return Stream(index, stream_id=_C._cuda_current_stream(index))


def default_stream(device=None):
    """The default stream of `device` (handle 0)."""
    return Stream(_device_index(device), stream_id=0)


def set_stream(stream):
    """Make `stream` the current stream of its device."""
    if stream is not None:
        _C._cuda_set_stream(stream.device_index, stream.cuda_stream)


class StreamContext:
    """`with torch.cuda.stream(s):`: work inside goes to `s` (nothing changes when `s` is None)."""

    def __init__(self, stream):
        self.stream = stream
        self._previous = None

    def __enter__(self):
        if self.stream is not None:
            self._previous = _C._cuda_set_stream(self.stream.device_index, self.stream.cuda_stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            _C._cuda_set_stream(self.stream.device_index, self._previous)
        return False


def stream(stream):
    """torch.cuda.stream(s): a context manager that makes `s` current inside."""
    return StreamContext(stream)
