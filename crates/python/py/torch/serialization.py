"""torch.save and torch.load, with the device memory PyTorch 2.11's take.

Note [save and load]: PyTorch's `torch.save` writes each tensor's whole storage once (views share
it), copying a CUDA storage to the host first, so saving takes no device memory. `torch.load` makes
each storage on the device it was saved from (or where `map_location` sends it) as it first meets
it while unpickling, which is the order `torch.save` first met it: one allocation of the storage's
size each, the tensors views of them. torchlet does both; its file is a pickle of its own (the
structure, each tensor's storage, offset, size and stride, and each storage's bytes), which
torchlet loads and PyTorch does not. In a shapes-only run (`torchlet fit`) storages have no values,
and a file saved there loads as shapes only.
"""

import io
import os
import pickle
import sys
from collections import OrderedDict

import torch

_C = sys.modules["torch._C"]
_FORMAT = "torchlet-save-1"


class _TensorRef:
    """A tensor in the saved structure: its storage's key and its view of that storage."""

    def __init__(self, key, offset, size, stride, requires_grad, parameter):
        self.key, self.offset, self.size, self.stride = key, offset, size, stride
        self.requires_grad, self.parameter = requires_grad, parameter


def _map(value, leaf, is_leaf):
    """`value` with each leaf replaced by `leaf(it)`, through dicts, lists and tuples in the order
    pickle meets them (state_dicts are such containers)."""
    if is_leaf(value):
        return leaf(value)
    if isinstance(value, OrderedDict):
        return OrderedDict((k, _map(v, leaf, is_leaf)) for k, v in value.items())
    if isinstance(value, dict):
        return {k: _map(v, leaf, is_leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_map(v, leaf, is_leaf) for v in value]
    if type(value) is tuple:
        return tuple(_map(v, leaf, is_leaf) for v in value)
    return value


def _saved(value, storages, keys):
    """A tensor as a _TensorRef, its storage added to `storages` the first time it is met."""
    ptr = value.untyped_storage().data_ptr()
    if ptr not in keys:
        keys[ptr] = len(storages)
        storages.append({
            "dtype": value.dtype._name,
            "device": str(value.device),
            "nbytes": value.untyped_storage().nbytes(),
            "data": _C._storage_bytes(value),
        })
    return _TensorRef(keys[ptr], value.storage_offset(), tuple(value.shape), tuple(value.stride()),
                      value.requires_grad, isinstance(value, torch.nn.Parameter))


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Write `obj` (tensors in dicts, lists and tuples, as state_dicts are) to the file `f`."""
    storages, keys = [], {}
    replaced = _map(obj, lambda t: _saved(t, storages, keys), lambda v: isinstance(v, torch.Tensor))
    saved = {"format": _FORMAT, "obj": replaced, "storages": storages}
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            pickle.dump(saved, out, protocol=pickle.HIGHEST_PROTOCOL)
    else:
        pickle.dump(saved, f, protocol=pickle.HIGHEST_PROTOCOL)


def _target(device, map_location):
    """Where a storage saved on `device` loads (PyTorch's map_location: a device, a name, a dict)."""
    if map_location is None:
        return device
    if isinstance(map_location, dict):
        return str(map_location.get(device, device))
    if callable(map_location) and not isinstance(map_location, (str, torch.device)):
        raise NotImplementedError(
            "torch.load(map_location=<a function>) is not supported by torchlet; pass a device, "
            "a device name or a dict from saved device to device"
        )
    return str(torch.device(map_location))


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Read what torchlet's `save` wrote, making each storage on its device as it is first met."""
    try:
        if isinstance(f, (str, os.PathLike)):
            with open(f, "rb") as src:
                saved = pickle.load(src)
        else:
            saved = pickle.load(f)
    except OSError:
        raise
    except Exception:
        saved = None
    if not isinstance(saved, dict) or saved.get("format") != _FORMAT:
        raise RuntimeError(
            "torch.load: this file was not written by torchlet's torch.save; torchlet reads only its "
            "own files (a checkpoint PyTorch wrote cannot be read here: build the model and let it "
            "make its own weights)"
        )
    storages = saved["storages"]
    made = {}

    def tensor(ref):
        if ref.key not in made:
            s = storages[ref.key]
            made[ref.key] = _C._storage_from_bytes(
                s["data"], s["nbytes"], s["dtype"], _target(s["device"], map_location)
            )
        t = _C._storage_view(made[ref.key], list(ref.size), list(ref.stride), ref.offset)
        if ref.parameter:
            return torch.nn.Parameter(t, requires_grad=ref.requires_grad)
        return t.requires_grad_(ref.requires_grad) if ref.requires_grad else t

    return _map(saved["obj"], tensor, lambda v: isinstance(v, _TensorRef))
