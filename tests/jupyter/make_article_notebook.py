"""Writes article.ipynb: the article's four ways to free GPU memory, one cell per step, in torchlet.

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


if __name__ == "__main__":
    import os
    nbformat.write(build(), os.path.join(os.path.dirname(os.path.abspath(__file__)), "article.ipynb"))
