"""What a notebook asks of the Python kernel besides running cells: completion, help on a name,
and the variables a cell left. Every function takes the namespace of `__main__` and never runs
user code other than looking names up, so asking cannot change memory."""

import builtins
import inspect
import keyword


def _lookup(ns, dotted):
    """The object a dotted name (`model.fc.weight`) refers to in `ns`, or raise LookupError."""
    head, *rest = dotted.split(".")
    if head in ns:
        obj = ns[head]
    elif hasattr(builtins, head):
        obj = getattr(builtins, head)
    else:
        raise LookupError(head)
    for part in rest:
        obj = getattr(obj, part)
    return obj


def _visible(names, prefix):
    """Names starting with `prefix`; private ones only when the prefix asks for them."""
    shown = [n for n in names if n.startswith(prefix)]
    if not prefix.startswith("_"):
        shown = [n for n in shown if not n.startswith("_")]
    return sorted(set(shown))


def complete(ns, token):
    """What may follow `token` (`tor`, `x.sh`): names of the namespace, builtins and keywords,
    or, after a dot, what `dir()` gives for the object before it."""
    if "." in token:
        head, _, tail = token.rpartition(".")
        try:
            obj = _lookup(ns, head)
        except Exception:
            return []
        return _visible(dir(obj), tail)
    names = list(ns) + dir(builtins) + keyword.kwlist
    return _visible(names, token)


def describe(ns, dotted):
    """Help on a name as the notebook's inspector shows it: its signature or type, its value
    (tensors as PyTorch prints them), and its docstring; None when the name is unknown."""
    try:
        obj = _lookup(ns, dotted)
    except Exception:
        return None
    lines = []
    if callable(obj) and not inspect.isclass(obj):
        try:
            lines.append(f"{dotted}{inspect.signature(obj)}")
        except (TypeError, ValueError):
            lines.append(f"{dotted}(…)")
    else:
        lines.append(f"{dotted}: {type(obj).__name__}")
        if not inspect.ismodule(obj) and not inspect.isclass(obj):
            text = repr(obj)
            lines.append(text if len(text) < 2000 else text[:2000] + " …")
    # An instance's docstring is its class's: shown for what is looked up by its own name only.
    documented = callable(obj) or inspect.ismodule(obj)
    doc = inspect.getdoc(obj) if documented else None
    if doc:
        lines += ["", doc]
    return "\n".join(lines)
