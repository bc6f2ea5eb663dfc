"""Writes article.ipynb and article_python.ipynb: the article's four ways to free GPU memory, one
cell per step, in torchlet's Rhai and in Python as the article writes it.

Each measuring cell ends with `[memory_allocated(), memory_reserved()]` and carries
`metadata.torchlet.reference = [method, step]`, the key of PyTorch's numbers in tests/data/torch-h200.json
(recorded on an H200), so test_notebook.py can compare every output with PyTorch's.
"""
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

MEASURE = "[memory_allocated(), memory_reserved()]"


def step(code, method=None, key=None):
    cell = new_code_cell(code)
    if method:
        cell.metadata["torchlet"] = {"reference": [method, key]}
    return cell


def build():
    m1, m2, m3, m4 = (
        "article_method_1_del",
        "article_method_2_empty_cache_while_x_alive",
        "article_method_3_no_grad",
        "article_method_4_del_and_empty_cache",
    )
    cells = [
        new_markdown_cell("# Four ways to free GPU memory\n\nEach cell shows "
                          "`[memory_allocated(), memory_reserved()]` in bytes after its step."),
        new_markdown_cell("The allocator keeps its history from here on, so the last cell can draw it."),
        step("cuda::record_memory_history();"),
        new_markdown_cell("## 1. `del`"),
        step(f"let x = randn(1000, 1000).cuda();\n{MEASURE}", m1, "x = randn(1000,1000).cuda()"),
        step(f"x = x.cpu();\n{MEASURE}", m1, "x = x.cpu()"),
        step(f"del x;\n{MEASURE}", m1, "del x"),
        step(f"empty_cache();\n{MEASURE}", m1, "empty_cache()"),
        new_markdown_cell("## 2. `empty_cache()` while the tensor is alive"),
        step(f"let x = randn(1000, 1000).cuda();\n{MEASURE}", m2, "x = randn(1000,1000).cuda()"),
        step(f"empty_cache();\n{MEASURE}", m2, "empty_cache()"),
        step("del x;\nempty_cache();"),
        new_markdown_cell("## 3. `no_grad`"),
        step(f"let x = randn(1000, 1000).cuda();\nno_grad {{ let y = x + 1; }};\n{MEASURE}",
             m3, "x = randn(1000,1000).cuda(); no_grad { y = x + 1 }"),
        step("y.requires_grad", m3, "y.requires_grad"),
        step("del x, y;\nempty_cache();"),
        new_markdown_cell("## 4. `del` a temporary, then `empty_cache()`"),
        step(f"let x = randn(1000, 1000).cuda();\nlet temp = x * 2;\n{MEASURE}",
             m4, "x = randn(1000,1000).cuda(); temp = x * 2"),
        step(f"del temp;\n{MEASURE}", m4, "del temp"),
        step(f"empty_cache();\n{MEASURE}", m4, "empty_cache()"),
        new_markdown_cell("The allocator's own view:"),
        step("%mem"),
        new_markdown_cell("The whole notebook as a picture: allocated bytes by variable, reserved as a "
                          "line, segments created and released marked."),
        step("plot_memory()"),
    ]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "torchlet", "display_name": "torchlet (Rhai)", "language": "rhai"}
    nb.metadata["language_info"] = {"name": "rhai", "file_extension": ".rhai"}
    return nb


PY_MEASURE = "[torch.cuda.memory_allocated(), torch.cuda.memory_reserved()]"


def build_python():
    """The same steps in Python, for the torchlet (Python) kernel: the article's own code."""
    m1, m2, m3, m4 = (
        "article_method_1_del",
        "article_method_2_empty_cache_while_x_alive",
        "article_method_3_no_grad",
        "article_method_4_del_and_empty_cache",
    )
    new_x = "x = torch.randn(1000, 1000).cuda()"
    cells = [
        new_markdown_cell("# Four ways to free GPU memory, in Python\n\nEach cell shows "
                          f"`{PY_MEASURE}` in bytes after its step."),
        step("import torch"),
        new_markdown_cell("## 1. `del`"),
        step(f"{new_x}\n{PY_MEASURE}", m1, "x = randn(1000,1000).cuda()"),
        step(f"x = x.cpu()\n{PY_MEASURE}", m1, "x = x.cpu()"),
        step(f"del x\n{PY_MEASURE}", m1, "del x"),
        step(f"torch.cuda.empty_cache()\n{PY_MEASURE}", m1, "empty_cache()"),
        new_markdown_cell("## 2. `torch.cuda.empty_cache()` while the tensor is alive"),
        step(f"{new_x}\n{PY_MEASURE}", m2, "x = randn(1000,1000).cuda()"),
        step(f"torch.cuda.empty_cache()\n{PY_MEASURE}", m2, "empty_cache()"),
        step("del x\ntorch.cuda.empty_cache()"),
        new_markdown_cell("## 3. `with torch.no_grad():`"),
        step(f"{new_x}\nwith torch.no_grad():\n    y = x + 1\n{PY_MEASURE}",
             m3, "x = randn(1000,1000).cuda(); no_grad { y = x + 1 }"),
        step("y.requires_grad", m3, "y.requires_grad"),
        step("del x, y\ntorch.cuda.empty_cache()"),
        new_markdown_cell("## 4. `del` a temporary, then `torch.cuda.empty_cache()`"),
        step(f"{new_x}\ntemp = x * 2\n{PY_MEASURE}", m4, "x = randn(1000,1000).cuda(); temp = x * 2"),
        step(f"del temp\n{PY_MEASURE}", m4, "del temp"),
        step(f"torch.cuda.empty_cache()\n{PY_MEASURE}", m4, "empty_cache()"),
        new_markdown_cell("The allocator's own view:"),
        step("print(torch.cuda.memory_summary())"),
    ]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "torchlet-python", "display_name": "torchlet (Python)",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python", "file_extension": ".py"}
    return nb


if __name__ == "__main__":
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    nbformat.write(build(), os.path.join(here, "article.ipynb"))
    nbformat.write(build_python(), os.path.join(here, "article_python.ipynb"))
