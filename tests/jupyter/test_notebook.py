"""nbclient runs article.ipynb (the article's four methods) on a simulated GPU; every output must be PyTorch's number.

The kernelspec `torchlet-sim` (installed with `--env TORCHLET_SIMULATE_CUDA=16GiB`) runs it; the
expected numbers are tests/data/torch-h200.json, recorded from PyTorch on an H200.
"""
import json
import os
import unittest

import nbformat
from nbclient import NotebookClient

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "data", "torch-h200.json")
KERNEL = os.environ.get("TORCHLET_SIM_KERNEL_NAME", "torchlet-sim")


def expected_text(value):
    """How the cell's last expression echoes the reference value."""
    if isinstance(value, dict):
        return f"[{value['allocated']}, {value['reserved']}]"
    return json.dumps(value)


class ArticleNotebook(unittest.TestCase):
    def test_every_step_shows_pytorchs_numbers(self):
        nb = nbformat.read(os.path.join(HERE, "article.ipynb"), as_version=4)
        with open(REFERENCE) as f:
            reference = json.load(f)
        NotebookClient(nb, kernel_name=KERNEL, timeout=120, allow_errors=False).execute()
        checked = 0
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            errors = [o for o in cell.outputs if o.output_type == "error"]
            self.assertEqual(errors, [], f"cell {index} failed")
            ref = cell.metadata.get("torchlet", {}).get("reference")
            if not ref:
                continue
            method, step = ref
            results = [o for o in cell.outputs if o.output_type == "execute_result"]
            self.assertEqual(len(results), 1, f"cell {index} ({step}) has no result")
            with self.subTest(method=method, step=step):
                self.assertEqual(results[0]["data"]["text/plain"], expected_text(reference[method][step]))
            checked += 1
        self.assertEqual(checked, 11, "every step of the four methods is checked")
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


if __name__ == "__main__":
    unittest.main()
