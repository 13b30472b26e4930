"""Every notebook runs top to bottom without an error and shows what it is there to show: the
quickstart its finite-difference check of every gradient, its GRU and its plots (every notebook
must show at least one figure), the training notebook its falling loss, the PyTorch notebook
its agreement with torch.nn, its loss curve and its timing table (within its time budget), the
benchmarks notebook its table, its three figures and its checked claims.

Each notebook runs once (``executed``) in a Jupyter kernel, its figures shown inline as in
Jupyter; the tests read the outputs of its cells. Two cells are added to the in-memory copy
(the file is not touched): a first one keeps the figures open after they are shown, and a
probe at the end prints, as JSON, what the outputs cannot show: the Axes of every figure
(title and number of bars; colorbars counted apart), any legend that covers a bar and any x
tick labels that run into each other (both measured on the drawn figure), and in the
benchmarks notebook how many rows, thread counts and fits the results have.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from toolkit import RETURNED, TOLERANCES

TRAINING_TEXT = Path(__file__).parents[1] / "examples" / "data" / "tiny_corpus.txt"
NOTEBOOKS = {p.stem: p for p in sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))}
KEEP_FIGURES = "%config InlineBackend.close_figures = False"
PROBE = """
import json
import matplotlib.pyplot as plt
from matplotlib.transforms import Bbox
probe = {"figures": [], "colorbars": 0, "legends": 0, "covered": [], "crowded": []}
for fig in map(plt.figure, plt.get_fignums()):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    probe["colorbars"] += len(fig.axes) - len(axes)
    # Every bar as drawn (clipped to its Axes), against every legend of the figure.
    bars = [(ax, Bbox.intersection(bar.get_window_extent(renderer), ax.get_window_extent(renderer)))
            for ax in axes for bar in ax.patches]
    legends = [ax.get_legend() for ax in axes if ax.get_legend()] + fig.legends
    for legend in legends:
        probe["legends"] += 1
        frame = legend.get_window_extent(renderer)
        probe["covered"] += [ax.get_title() for ax, box in bars
                             if box is not None and box.overlaps(frame)]
    for ax in axes:
        probe["figures"].append({"title": ax.get_title(), "bars": len(ax.patches)})
        labels = [t.get_window_extent(renderer) for t in ax.get_xticklabels()
                  if t.get_visible() and t.get_text()]
        probe["crowded"] += [ax.get_title() for a, b in zip(labels, labels[1:]) if a.overlaps(b)]
if "results" in globals():
    probe |= {"rows": len(results["results"]), "threads": meta["threads"]["measured"],
              "fits": len(scaling["fits"])}
print("PROBE", json.dumps(probe))
"""


@functools.cache
def executed(stem: str):
    """The notebook after a run, with the probe as its last cell."""
    path = NOTEBOOKS[stem]
    notebook = nbformat.read(path, as_version=4)
    # Figures are shown inline as in Jupyter; kept open afterwards so the probe can list them.
    notebook.cells.insert(0, nbformat.v4.new_code_cell(KEEP_FIGURES))
    notebook.cells.append(nbformat.v4.new_code_cell(PROBE))
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return notebook


def code_cells(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def stdout(cell) -> str:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def cell_calling(notebook, text: str):
    (cell,) = [c for c in code_cells(notebook) if text in c.source]
    return cell


def probe(notebook) -> dict:
    (line,) = [ln for ln in stdout(code_cells(notebook)[-1]).splitlines() if ln.startswith("PROBE")]
    return json.loads(line.removeprefix("PROBE"))


def test_every_notebook_is_found():
    assert set(NOTEBOOKS) == {"01_quickstart", "02_training", "03_pytorch", "benchmarks"}


@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_committed_without_outputs(stem):
    notebook = nbformat.read(NOTEBOOKS[stem], as_version=4)
    assert all(not cell.get("outputs") and cell.get("execution_count") is None
               for cell in code_cells(notebook)), f"{stem} is committed with outputs"


@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_every_notebook_shows_its_figures(stem):
    """Each notebook draws at least one figure, and Jupyter shows it (an image output): a
    notebook that sets a non-interactive backend, or draws nothing, fails here."""
    images = [o for cell in code_cells(executed(stem)) for o in cell.outputs
              if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert images, f"{stem} shows no figure"


@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_every_cell_runs_without_an_error(stem):
    cells = code_cells(executed(stem))
    assert [cell.execution_count for cell in cells] == list(range(1, len(cells) + 1))
    for cell in cells:
        kinds = {o.output_type for o in cell.outputs}
        assert "error" not in kinds, f"{stem}: {cell.source[:80]!r} raised"
        stderr = [o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"]
        assert not stderr, f"{stem}: {cell.source[:80]!r} wrote to stderr: {stderr}"


def test_quickstart_checks_every_gradient_against_finite_differences():
    notebook = executed("01_quickstart")
    config = stdout(cell_calling(notebook, "show_config()"))
    assert re.search(r"^rnngraph threads\s*:\s*\d+$", config, re.MULTILINE), config
    shapes = stdout(cell_calling(notebook, "g.run(feeds=feeds"))
    assert shapes.split() == ["h:", "(12,", "3,", "5)", "dR:", "(5,", "5)", "dh0:", "(3,", "5)"]
    lines = stdout(cell_calling(notebook, "finite_difference(tensor)")).splitlines()
    rows = [re.fullmatch(r"(\w+)\s+max relative error (\S+)", line) for line in lines]
    assert all(rows), lines
    assert [row[1] for row in rows] == list(RETURNED["singleGateRNN"])
    for row in rows:
        assert float(row[2]) < TOLERANCES["finite_differences"].bound, row[0]


def test_quickstart_draws_the_source_gradient_and_the_gates_over_time():
    facts = probe(executed("01_quickstart"))
    figures = facts["figures"]
    assert figures[0] == {"title": "singleGateRNN source gradient", "bars": 12}  # T = 12
    assert [f["title"] for f in figures[1:]] == [
        "gate input i", "gate forget f", "gate cell z", "gate output o", "state h"]
    assert facts["colorbars"] == 2  # one for the four gates, one for the state


@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_no_legend_covers_a_bar_and_no_tick_labels_overlap(stem):
    """Measured on the drawn figures: every legend's frame against every bar (clipped to its
    Axes), and each x tick label against the next."""
    facts = probe(executed(stem))
    assert facts["covered"] == [], f"{stem}: a legend covers bars of {facts['covered']}"
    assert facts["crowded"] == [], f"{stem}: x tick labels overlap in {facts['crowded']}"
    if stem == "benchmarks":
        assert facts["legends"] >= 2 * len(facts["threads"])  # the two bar charts' legends


def test_quickstart_checks_a_loss_gradient_with_rnngraph_testing():
    lines = stdout(cell_calling(executed("01_quickstart"), "check_gradients")).splitlines()
    rows = [re.fullmatch(r"(\S+)\s+worst relative error (\S+)", line) for line in lines]
    assert [row[1] for row in rows if row] == ["source", "recurrentWeight"], lines
    assert all(float(row[2]) < 1e-6 for row in rows if row), lines


def test_quickstart_runs_a_masked_bidirectional_lstm_and_a_gru_from_torch():
    notebook = executed("01_quickstart")
    assert stdout(cell_calling(notebook, "bidirectional=True")).split() == [
        "h:", "(10,", "2,", "8)", "c:", "(10,", "2,", "8)"]
    (difference,) = re.findall(r"^GRU from torch.nn: max \|torch − rnngraph\| = (\S+)$",
                               stdout(cell_calling(notebook, "torch.nn.GRU")), re.MULTILINE)
    assert float(difference) <= 1e-12


def test_quickstart_runs_a_gru_without_torch():
    """The standalone GRU (resetAfter, training) needs no torch: its shapes are printed and
    the notebook checks its state against its gates [z, r, o]."""
    cell = cell_calling(executed("01_quickstart"), "rg.GRUDescriptor(resetAfter=True")
    assert "torch" not in cell.source
    assert stdout(cell).split() == ["h:", "(10,", "2,", "4)", "zState:", "(10,", "2,", "12)"]


def test_pytorch_notebook_agrees_with_the_converted_torch_lstm():
    lines = stdout(cell_calling(executed("03_pytorch"), "from_torch")).splitlines()
    rows = [re.fullmatch(r"(\S.*?)\s+max \|torch − rnngraph\| = (\S+)", line) for line in lines]
    rows = [row for row in rows if row]
    assert [row[1] for row in rows] == ["output", "h_n", "c_n", "input gradient"], lines
    for row in rows:
        assert float(row[2]) <= 1e-12, row[0]


def test_training_notebook_lowers_the_loss_and_learns_the_text():
    notebook = executed("02_training")
    text = stdout(cell_calling(notebook, "model.train_step"))
    (match,) = re.findall(r"^first loss (\S+), final loss (\S+) ", text, re.MULTILINE)
    first, final = map(float, match)
    assert final < first / 2, text
    check = stdout(cell_calling(notebook, "assert final_loss < first_loss / 2"))
    assert re.fullmatch(r"loss: first step \d+\.\d+, last 10 steps \d+\.\d+ \(\d+% of the first\)\n",
                        check), check
    before = stdout(cell_calling(notebook, "before training"))
    after = stdout(cell_calling(notebook, "after training"))
    words = set(TRAINING_TEXT.read_text().split())
    known = [w in words for w in after.split(":", 1)[1].strip(" '\n").split()[1:-1]]
    assert sum(known) >= 0.6 * len(known), after  # mostly the corpus's own words
    assert "1 LSTM, 1 LSTMGradients" in before, before  # the forward op runs once
    assert probe(notebook)["figures"] == [
        {"title": "character LSTM trained inside one Graph", "bars": 0}]


def test_training_notebook_times_the_same_model_in_pytorch():
    text = stdout(cell_calling(executed("02_training"), "torch_twin"))
    for name in ("rnngraph", "PyTorch"):
        assert re.search(rf"^{name}\s+\d+\.\d+ ms per training step", text, re.MULTILINE), text
    assert re.search(r"^PyTorch / rnngraph: \d+\.\d+x$", text, re.MULTILINE), text


def test_pytorch_notebook_training_lowers_the_loss():
    text = stdout(cell_calling(executed("03_pytorch"), "peephole=True"))
    (match,) = re.findall(r"^first loss (\S+), final loss (\S+)$", text, re.MULTILINE)
    first, final = map(float, match)
    assert final < first / 2, text


def test_pytorch_notebook_draws_its_loss_curve():
    figures = probe(executed("03_pytorch"))["figures"]
    assert figures == [{"title": "hardSigmoid + peephole LSTM: training loss", "bars": 0}]


def test_pytorch_notebook_times_a_step_of_both_models():
    lines = stdout(cell_calling(executed("03_pytorch"), "torch_seconds")).splitlines()
    assert lines[0].split() == ["model", "median", "ms/step", "final", "loss"], lines
    rows = [re.fullmatch(r"(\S+) \(.*\)\s+(\S+)\s+(\S+)", line) for line in lines[1:]]
    assert all(rows), lines
    assert [row[1] for row in rows] == ["rnngraph.torch.LSTM", "torch.nn.LSTM"]
    for row in rows:
        assert float(row[2]) > 0 and float(row[3]) > 0, row[0]


def test_benchmarks_notebook_shows_its_table_figures_and_claims():
    notebook = executed("benchmarks")
    facts = probe(notebook)
    header = stdout(cell_calling(notebook, "results_path, scaling_path")).splitlines()
    assert [line.split(":")[0] for line in header[:3]] == ["results", "scaling", "machine"]
    (table,) = [o.data["text/markdown"] for o in cell_calling(notebook, "report.table").outputs
                if "text/markdown" in o.get("data", {})]
    lines = table.splitlines()
    assert lines[0].startswith("| # | row |") and set(lines[1]) == {"|", "-"}
    assert len([line for line in lines[2:] if line.startswith("| ")]) == facts["rows"]
    assert not [line for line in lines if line.startswith("Error:")], table
    for call in ("speedup_figure", "ceiling_figure", "scaling_figure"):
        images = [o for o in cell_calling(notebook, call).outputs
                  if "image/png" in o.get("data", {})]
        assert len(images) == 1, call
    fits = stdout(cell_calling(notebook, "plot.scaling_figure"))
    assert len(re.findall(r"R² \d\.\d{4}", fits)) == facts["fits"] > 0, fits
    claims = stdout(cell_calling(notebook, "rnngraph faster than"))
    expected = [f"{t} thread(s): rnngraph faster than {peer} on"
                for t in facts["threads"] for peer in ("torch", "onnxruntime")]
    assert [line.split(" on ")[0] + " on" for line in claims.splitlines()] == expected
