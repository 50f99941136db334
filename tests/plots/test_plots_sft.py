"""sdrlib.plots' notebook 03 figures: the SFT loss curve and generations next to their references."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sdrlib.data import Record  # noqa: E402
from sdrlib.plots import (NO_VALIDATION_LOSS, PALETTE, check_fonts, finding_verdicts, plot_generations,  # noqa: E402
                          plot_sft_loss, style)


def test_plot_sft_loss_has_a_legend_that_says_there_is_no_validation_loss():
    steps = np.arange(1, 21)
    curves = pd.DataFrame({"step": steps, "loss": np.where(steps % 5 == 0, 7.0 - 0.1 * steps, np.nan),
                           "mean_token_accuracy": np.where(steps % 5 == 0, 0.01 * steps, np.nan),
                           "step_seconds": 0.2})  # step_seconds every step, losses every logging_steps
    with style():
        fig = plot_sft_loss(curves, title="SFT (tiny)")
        check_fonts(fig)
        colours = [matplotlib.colors.to_hex(ln.get_color()) for ax in fig.axes for ln in ax.get_lines()]
    legend = fig.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["training loss (cross-entropy)", "training token accuracy"]
    assert legend.get_title().get_text() == NO_VALIDATION_LOSS
    assert fig.axes[0].get_lines()[0].get_xdata().tolist() == [5, 10, 15, 20]
    assert np.allclose(fig.axes[0].get_lines()[0].get_ydata(), [6.5, 6.0, 5.5, 5.0])  # the logged losses
    assert np.allclose(fig.axes[1].get_lines()[0].get_ydata(), [0.05, 0.10, 0.15, 0.20])  # and accuracies
    assert colours == [PALETTE[0].lower(), PALETTE[1].lower()]  # Okabe-Ito blue and orange
    plt.close(fig)
    # a trainer that evaluates: its validation loss is drawn and the note goes
    with style():
        fig = plot_sft_loss(curves.assign(eval_loss=np.where(steps == 20, 5.5, np.nan)))
    legend = fig.axes[0].get_legend()
    assert "validation loss" in [t.get_text() for t in legend.get_texts()] and not legend.get_title().get_text()
    plt.close(fig)
    with pytest.raises(ValueError, match="no logged training loss"):
        plot_sft_loss(curves.assign(loss=np.nan))


def test_plot_generations_shows_each_generation_above_its_reference(tmp_path):
    from PIL import Image

    p = tmp_path / "img.png"
    Image.fromarray(np.full((16, 16), 200, np.uint8)).save(p)
    recs = [Record(f"syn-{i}", [str(p)], f"Reference findings {i}.", f"Reference impression {i}.",
                   {"No Finding": 1}, "test") for i in range(2)]
    gens = ["<think>Heart is big.</think><answer>Cardiomegaly.</answer>", "garbage\x01text"]
    with style():
        fig = plot_generations(recs, gens)
    texts = [a.texts[-1].get_text() for a in fig.axes if a.texts]  # the report text, under the verdict lines
    assert len(texts) == 2 and "REF F: Reference findings 0." in texts[0] and "REF I: Reference impression 1." in texts[1]
    assert texts[0].startswith("GEN F: Heart is big.\nGEN I: Cardiomegaly.\nREF F:")  # parsed, above the reference
    assert "GEN (invalid): garbage\N{MIDDLE DOT}text" in texts[1]  # a control byte drawn as a middle dot
    assert fig.axes[0].get_title() == "syn-0 (no_finding)\n1 hallucinated"
    assert np.array_equal(fig.axes[0].images[0].get_array(), np.full((16, 16), 200, np.uint8))
    with pytest.raises(ValueError, match="2 records against 1 generations"):
        plot_generations(recs, gens[:1])


def test_plot_generations_labels_each_sample_ok_missed_hallucinated(tmp_path):
    from matplotlib.colors import to_hex
    from PIL import Image

    p = tmp_path / "img.png"
    Image.fromarray(np.full((16, 16), 200, np.uint8)).save(p)
    recs = [Record("syn-a", [str(p)], "The heart is enlarged. Mild pulmonary edema.", "Cardiomegaly and edema.",
                   {"Cardiomegaly": 1, "Edema": 1}, "test"),
            Record("syn-b", [str(p)], "The lungs are clear.", "No acute disease.", {"No Finding": 1}, "test")]
    gens = ["<think>The heart is enlarged. Small right pleural effusion.</think><answer>Cardiomegaly.</answer>",
            "<think>The lungs are clear.</think><answer>Normal chest.</answer>"]
    assert finding_verdicts(recs[0], gens[0]) == {"ok": ["Cardiomegaly"], "missed": ["Edema"],
                                                  "hallucinated": ["Pleural Effusion"]}
    assert finding_verdicts(recs[1], gens[1]) == {"ok": [], "missed": [], "hallucinated": []}
    assert finding_verdicts(recs[0], "not a template")["missed"] == ["Cardiomegaly", "Edema"]
    with style():
        fig = plot_generations(recs, gens)
    text_axes = [a for a in fig.axes if a.texts]
    lines = [(t.get_text(), to_hex(t.get_color())) for t in text_axes[0].texts[:-1]]
    assert lines == [("ok:           Cardiomegaly", PALETTE[2].lower()), ("missed:       Edema", PALETTE[3].lower()),
                     ("hallucinated: Pleural Effusion", PALETTE[4].lower())]
    assert [t.get_text() for t in text_axes[1].texts[:-1]] == ["ok:           no finding in either report"]
    assert fig.axes[0].get_title() == "syn-a (multi)\n1 of 2 found, 1 hallucinated"
    assert "hallucinated = in the generated report only" in fig._suptitle.get_text()
    check_fonts(fig)
    # a generation that is no report is not read as a normal one
    with style():
        fig = plot_generations(recs, ["garbage", "garbage"])
    text_axes = [a for a in fig.axes if a.texts]
    not_a_report = "not a report: the generation does not parse as the template"
    assert [t.get_text() for t in text_axes[0].texts[:-1]] == [not_a_report, "missed:       Cardiomegaly, Edema"]
    assert [t.get_text() for t in text_axes[1].texts[:-1]] == [not_a_report]
