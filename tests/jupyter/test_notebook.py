"""nbclient runs article.ipynb (the article's four methods in Rhai) and article_python.ipynb (the
same in Python) on a simulated GPU; every output must be PyTorch's number.

The kernelspecs `torchlet-sim` and `torchlet-sim-python` (installed with `--env
TORCHLET_SIMULATE_CUDA=16GiB`) run them; the expected numbers are tests/data/torch-h200.json,
recorded from PyTorch on an H200.
"""
import json
import os
import unittest

import nbformat
from nbclient import NotebookClient

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "data", "torch-h200.json")
KERNEL = os.environ.get("TORCHLET_SIM_KERNEL_NAME", "torchlet-sim")
PYTHON_KERNEL = KERNEL + "-python"


def expected_text(value, python=False):
    """How the cell's last expression echoes the reference value (Rhai's `false`, Python's `False`)."""
    if isinstance(value, dict):
        return f"[{value['allocated']}, {value['reserved']}]"
    if python and isinstance(value, bool):
        return repr(value)
    return json.dumps(value)


def run_and_check(case, name, kernel, python):
    """Run notebook `name` on `kernel`; check every referenced step; return the executed notebook."""
    nb = nbformat.read(os.path.join(HERE, name), as_version=4)
    with open(REFERENCE) as f:
        reference = json.load(f)
    NotebookClient(nb, kernel_name=kernel, timeout=120, allow_errors=False).execute()
    checked = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        case.assertEqual(errors, [], f"cell {index} failed")
        ref = cell.metadata.get("torchlet", {}).get("reference")
        if not ref:
            continue
        method, step = ref
        results = [o for o in cell.outputs if o.output_type == "execute_result"]
        case.assertEqual(len(results), 1, f"cell {index} ({step}) has no result")
        with case.subTest(method=method, step=step):
            case.assertEqual(results[0]["data"]["text/plain"],
                             expected_text(reference[method][step], python))
        checked += 1
    case.assertEqual(checked, 11, "every step of the four methods is checked")
    return nb


class ArticleNotebook(unittest.TestCase):
    def test_every_step_shows_pytorchs_numbers(self):
        nb = run_and_check(self, "article.ipynb", KERNEL, python=False)
        memory = next(c for c in nb.cells if c.source == "%mem")
        tables = [o for o in memory.outputs if o.output_type == "execute_result"]
        self.assertEqual(len(tables), 1, memory.outputs)
        self.assertIn("cuda:0", tables[0]["data"]["text/plain"])
        self.assertIn("<pre>", tables[0]["data"]["text/html"])
        plot = nb.cells[-1]
        self.assertEqual(plot.source, "plot_memory()")
        pictures = [o for o in plot.outputs if "image/svg+xml" in o.get("data", {})]
        self.assertEqual(len(pictures), 1, plot.outputs)
        self.assertIn("<svg", pictures[0]["data"]["image/svg+xml"])

    def test_the_python_notebook_shows_pytorchs_numbers_too(self):
        nb = run_and_check(self, "article_python.ipynb", PYTHON_KERNEL, python=True)
        summary = next(c for c in nb.cells if "memory_summary" in c.source)
        printed = "".join(o.get("text", "") for o in summary.outputs if o.output_type == "stream")
        self.assertIn("CUDA memory summary, device ID 0", printed)


if __name__ == "__main__":
    unittest.main()
