"""torch.einsum: PyTorch 2.11's algorithm (aten/src/ATen/native/Linear.cpp), so that its views,
copies and products allocate what PyTorch's do.

Each operand is permuted to one order of all labels (the output's first, in the output's order,
then the contracted ones alphabetically), with size-1 dims for the labels it lacks; the operands
are then contracted left to right: a label of only one of the pair is summed out of it first, the
pair's shared labels are contracted by `sumproduct_pair` (permute, reshape, one `bmm`, a view of
its result) or, with none to contract, multiplied; the contracted dims, left as size 1, are viewed
away at the end.
"""

import torch


def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    inputs, output = _parse(equation, operands)
    labels = list(output) + sorted({c for term in inputs for c in term} - set(output))
    counts = {c: sum(term.count(c) for term in inputs) for c in labels}
    ops = [_aligned(t, term, labels) for t, term in zip(operands, inputs)]
    out_dims = len(output)
    if len(ops) == 1:
        rest = list(range(out_dims, len(labels)))
        return ops[0].sum(tuple(rest)) if rest else ops[0]
    while len(ops) > 1:
        a, b = ops[0], ops[1]
        sum_dims = []
        for dim in range(out_dims, len(labels)):
            label = labels[dim]
            if a.size(dim) != 1 and b.size(dim) != 1:
                counts[label] -= 1
                if counts[label] == 1:
                    sum_dims.append(dim)
                    counts[label] = 0
            elif counts[label] == 1:
                if a.size(dim) != 1:
                    a = a.sum(dim, keepdim=True)
                    counts[label] = 0
                elif b.size(dim) != 1:
                    b = b.sum(dim, keepdim=True)
                    counts[label] = 0
        product = a * b if not sum_dims else _sumproduct_pair(a, b, sum_dims)
        ops = [product] + ops[2:]
    result = ops[0]
    if len(labels) > out_dims:
        result = result.view(tuple(result.shape[:out_dims]))
    return result


def _parse(equation, operands):
    equation = equation.replace(" ", "")
    if "." in equation:
        raise NotImplementedError("torchlet: einsum with an ellipsis (...) is not supported yet; name every dim")
    lhs, arrow, output = equation.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(operands):
        raise RuntimeError(
            f"einsum(): more operands were provided than specified in the equation"
            if len(operands) > len(inputs)
            else "einsum(): fewer operands were provided than specified in the equation"
        )
    for term, t in zip(inputs, operands):
        if len(term) != t.dim():
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(term)}) does not match the "
                f"number of dimensions ({t.dim()}) for operand {inputs.index(term)} and no ellipsis was given"
            )
        if len(set(term)) != len(term):
            raise NotImplementedError(
                f"torchlet: einsum with a label repeated in one operand ({term!r}: a diagonal) is not supported yet"
            )
    if not arrow:
        once = [c for c in sorted(set(lhs) - {","}) if lhs.count(c) == 1]
        output = "".join(once)
    return inputs, output


def _aligned(t, term, labels):
    """`t` permuted to the labels' order, with a size-1 dim for each label it lacks (views)."""
    order = [term.index(c) for c in labels if c in term]
    t = t.permute(*order) if order != list(range(len(order))) else t
    for dim, c in enumerate(labels):
        if c not in term:
            t = t.unsqueeze(dim)
    return t


def _sumproduct_pair(left, right, sum_dims):
    """ATen's sumproduct_pair with keepdim: the summed dims stay as size 1."""
    lro, lo, ro, summed = [], [], [], []
    lro_size = lo_size = ro_size = sum_size = 1
    for i in range(left.dim()):
        sl, sr = left.size(i) != 1, right.size(i) != 1
        if i in sum_dims:
            summed.append(i)
            if sl and sr:
                sum_size *= left.size(i)
            elif sl:
                left = left.sum(i, keepdim=True)
            elif sr:
                right = right.sum(i, keepdim=True)
        elif sl and sr:
            lro.append(i)
            lro_size *= left.size(i)
        elif sl:
            lo.append(i)
            lo_size *= left.size(i)
        else:
            ro.append(i)
            ro_size *= right.size(i)
    out_size = [left.size(d) for d in lro] + [left.size(d) for d in lo] + [1] * len(summed) + [right.size(d) for d in ro]
    lperm = lro + lo + summed + ro
    rperm = lro + summed + ro + lo
    operm = [0] * len(lperm)
    for i, d in enumerate(lro + lo + summed + ro):
        operm[d] = i
    left = left.permute(*lperm).reshape(lro_size, lo_size, sum_size)
    right = right.permute(*rperm).reshape(lro_size, sum_size, ro_size)
    return torch.bmm(left, right).view(tuple(out_size)).permute(*operm)
