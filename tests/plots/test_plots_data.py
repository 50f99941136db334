"""sdrlib.plots' notebook 00 figures: example studies, the synthetic findings, label prevalence, sentence counts.
Each test reads the drawn data back (bar widths and heights, image pixels, texts) against the table it came from."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from sdrlib.data import Record  # noqa: E402
from sdrlib.data.stats import prevalence_table, sentence_counts  # noqa: E402
from sdrlib.data.synthcxr import render_image  # noqa: E402
from sdrlib.plots import (plot_examples, plot_findings_gallery, plot_prevalence, plot_sentence_counts,  # noqa: E402
                          style)


@pytest.fixture
def records(tmp_path):
    from PIL import Image

    out = []
    labels = ({"No Finding": 1}, {"Edema": 1, "Pneumonia": -1, "Fracture": 0}, {"Edema": 1, "Cardiomegaly": 1})
    for i, lab in enumerate(labels):
        p = tmp_path / f"img{i}.png"
        Image.fromarray((np.random.default_rng(i).random((24, 24)) * 255).astype(np.uint8)).save(p)
        out.append(Record(f"syn-{i}", [str(p)], "Heart size is normal. The lungs are clear." + " More." * i,
                          "No acute disease.", lab, "train"))
    return out


def test_prevalence_bars_stack_the_table_s_percentages(records):
    prev = prevalence_table({"train": records})
    with style():
        fig = plot_prevalence(prev, "train")
    ax = fig.axes[0]
    n = len(prev)
    bars = ax.patches
    assert len(bars) == 3 * n  # positive, uncertain, negative for each observation
    for k, tag in enumerate(("pos", "unc", "neg")):
        assert np.allclose([b.get_width() for b in bars[k * n:(k + 1) * n]], prev[f"train {tag}%"].to_numpy())
    lefts = np.array([b.get_x() for b in bars[2 * n:]])  # negative starts where positive + uncertain end
    assert np.allclose(lefts, prev["train pos%"].to_numpy() + prev["train unc%"].to_numpy())
    assert [t.get_text() for t in ax.get_yticklabels()] == list(prev.index)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["positive (1)", "uncertain (-1)", "negative (0)"]


def test_sentence_count_bars_are_the_share_of_studies_per_count(records):
    counts = {"train": sentence_counts(records), "test": sentence_counts(records[:1])}
    with style():
        fig = plot_sentence_counts(counts)
    findings = fig.axes[0]
    hi = int(counts["train"]["findings"].max())
    heights = [b.get_height() for b in findings.patches]
    want = [np.bincount(counts[s]["findings"], minlength=hi + 1) / len(counts[s]) for s in ("train", "test")]
    assert np.allclose(heights, np.concatenate(want))
    assert [int(t) for t in findings.get_xticks()] == list(range(int(counts["train"]["findings"].min()), hi + 1))
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["train", "test"]


def test_examples_show_each_study_s_image_report_and_labels(records):
    from PIL import Image

    with style():
        fig = plot_examples(records, n=2)
    assert len(fig.axes) == 4  # n = 2 studies, an image and a text panel each
    img, txt = fig.axes[2], fig.axes[3]
    with Image.open(records[1].image_paths[0]) as im:
        assert np.array_equal(img.images[0].get_array(), np.asarray(im.convert("L")))
    assert img.get_title() == "syn-1 (multi)"
    text = txt.texts[0].get_text()
    assert text.startswith("FINDINGS: Heart size is normal.") and "IMPRESSION: No acute disease." in text
    assert "LABELS: +Edema, ?Pneumonia  | negated: 1" in text


def test_findings_gallery_draws_each_finding_on_one_patient():
    with style():
        fig = plot_findings_gallery(image_size=32, seed=3)
    shown = [a for a in fig.axes if a.images]
    assert len(shown) == 14 and shown[0].get_title() == "normal" and shown[-1].get_title() == "pacemaker"
    normal = render_image([], [], np.random.default_rng(3), size=32)
    assert np.array_equal(shown[0].images[0].get_array(), normal)  # the seeded patient, drawn as rendered
    assert not np.array_equal(shown[1].images[0].get_array(), normal)  # cardiomegaly changes the pixels
