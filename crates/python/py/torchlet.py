"""torchlet's explanations for Python programs: what holds GPU memory, and what each of the four
ways to free it (`del x`, `x = x.cpu()`, `torch.cuda.empty_cache()`, both) would do right now.

`import torchlet` works under torchlet only (PyTorch has no such module). Names are the program's:
variables, attributes and items (`model.blocks[0].fc.weight`, `opt.state[model.fc.weight]['exp_avg']`),
and the locals of the functions running, innermost first. Asking changes no memory."""

import torch
import torch.cuda

_C = torch._C


class Report:
    """A table that prints as text and shows as HTML in a notebook."""

    def __init__(self, plain, html):
        self._plain = plain
        self._html = html

    def __repr__(self):
        return self._plain

    __str__ = __repr__

    def _repr_html_(self):
        return self._html


class Holders(list):
    """Every live block of a device, biggest first: dicts with `address`, `size`, `requested`,
    `segment`, `segment_size`, `holders` (what keeps it alive) and `made_by` (the statement that
    allocated it). Prints as a table."""

    def __init__(self, rows, plain, html):
        super().__init__(rows)
        self._report = Report(plain, html)

    def __repr__(self):
        return repr(self._report)

    __str__ = __repr__

    def _repr_html_(self):
        return self._report._repr_html_()


class FreeReport(Report):
    """What each way to free `path` would do: `ways` is a list of dicts with `way` (the
    statements), `allocated` and `reserved` (the change in bytes) and `why`."""

    def __init__(self, path, ways, plain, html):
        super().__init__(plain, html)
        self.path = path
        self.ways = ways


def _device(device):
    return None if device is None else torch.cuda._index(device)


def memory_holders(device=None):
    """Every live block of `device` (the current CUDA device by default), biggest first, with
    the variables, gradients and autograd graphs that keep it alive."""
    return Holders(*_C._memory_holders(_device(device)))


def explain_free(x, device=None):
    """What `del x`, `x = x.cpu()`, `torch.cuda.empty_cache()` and `del x` with `empty_cache()`
    would each free now. `x` is a tensor, module or container that a variable holds, or a path
    into one as text (`"model.fc.weight"`)."""
    return FreeReport(*_C._explain_free(x, _device(device)))


def empty_cache_report(device=None):
    """What `torch.cuda.empty_cache()` would give back now, and which live blocks keep the other
    segments."""
    return Report(_C._empty_cache_report(_device(device)), "")
