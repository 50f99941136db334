"""sdrlib.experiments.synthcxr_visibility: the per-observation pixel ceilings at several sizes, the per-finding signal
(a finding drawn and not drawn under one nuisance), the command's files, --compare, and bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sdrlib.data.synthcxr import Finding
from sdrlib.experiments import synthcxr_visibility as vis
from sdrlib.experiments.sft_start import OBSERVATIONS
from sdrlib.experiments.synthcxr_visibility import VisibilityInputError, finding_signal, main, variant

pytestmark = pytest.mark.usefixtures("no_network")  # tests/conftest.py


@pytest.fixture(scope="module")
def vis_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("sdr")
    mp = pytest.MonkeyPatch()
    mp.setenv("SDR_ROOT", str(root))
    out = root / "evidence"
    argv = ["--profile", "smoke", "--name", "v.tiny", "--out", str(out), "--sizes", "8", "16",
            "--set", "data.n_train=80", "--set", "data.n_val=40", "--set", "data.image_size=32"]
    rc = main(argv)
    yield rc, out, argv
    mp.undo()


def test_variant_names_the_row_a_finding_counts_in():
    assert variant(Finding("fracture", detail="healed")) == "healed"
    assert variant(Finding("atelectasis", detail="compressive")) == "compressive"
    assert variant(Finding("atelectasis", detail="linear", hedged=True)) == "hedged"
    assert variant(Finding("atelectasis", detail="linear")) == "stated"
    assert variant(Finding("effusion", severity="large")) == "large"
    assert variant(Finding("mediastinum")) == ""


def test_command_writes_ceilings_at_each_size_and_the_signal_of_each_drawn_finding(vis_run):
    rc, out, _ = vis_run
    assert rc == 0
    ceil = pd.read_csv(out / "v.tiny.csv")
    assert list(ceil.observation) == list(OBSERVATIONS)
    assert list(ceil.columns) == ["observation", "n_pos_fit", "n_pos_score", "auroc_8", "f1_8", "auroc_16", "f1_16"]
    assert ceil.n_pos_fit.sum() > 0 and ceil.n_pos_score.sum() > 0
    sig = pd.read_csv(out / "v.tiny_signal.csv", keep_default_na=False)
    assert list(sig.columns) == ["kind", "variant", "n_studies", "max_d", "sum_d"]
    assert len(sig) and "pneumonia" not in set(sig.kind)
    assert (sig.max_d > 0).all() and (sig.sum_d >= sig.max_d).all() and (sig.n_studies > 0).all()
    info = json.loads((out / "v.tiny.json").read_text())
    assert info["n_train"] == 80 and info["n_val"] == 40 and info["sizes"] == [8, 16]
    assert info["generator_version"] and info["provenance"]["profile"] == "smoke"


def test_the_signal_is_the_finding_only(vis_run, monkeypatch):
    """Drawn with the same generator, a finding-blind renderer gives zero signal; the real one is deterministic."""
    from sdrlib.config import load_profile
    from sdrlib.data import load_split

    cfg = load_profile("smoke", {"data.n_train": 80, "data.n_val": 40, "data.image_size": 32})
    train = load_split(cfg, "train")
    first = finding_signal(train, 32, seed=1, signal_size=8)
    assert first.equals(finding_signal(train, 32, seed=1, signal_size=8))
    real = vis.render_image
    monkeypatch.setattr(vis, "render_image", lambda findings, devices, rng, size: real([], devices, rng, size=size))
    blind = finding_signal(train, 32, seed=1, signal_size=8)
    assert list(blind.kind) == list(first.kind) and (blind.max_d == 0).all()


def test_compare_sets_runs_side_by_side_and_refuses_other_studies(vis_run, capsys):
    _, out, _ = vis_run
    for suffix in (".csv", "_signal.csv"):
        (out / f"same{suffix}").write_bytes((out / f"v.tiny{suffix}").read_bytes())
    ceil, sig = vis.comparison(out, ["v.tiny", "same"])
    assert list(ceil.observation) == list(OBSERVATIONS)
    assert (ceil["v.tiny: auroc_8"].equals(ceil["same: auroc_8"]) and "v.tiny: max_d" in sig.columns
            and "same: max_d" in sig.columns)
    with pytest.raises(VisibilityInputError, match="each once"):
        vis.comparison(out, ["v.tiny", "v.tiny"])
    assert main(["--compare", "v.tiny", "--out", str(out)]) == 0
    assert "v.tiny: f1_16" in capsys.readouterr().out
    other = pd.read_csv(out / "v.tiny.csv")
    other["n_pos_score"] += 1
    other.to_csv(out / "other.csv", index=False)
    (out / "other_signal.csv").write_bytes((out / "v.tiny_signal.csv").read_bytes())
    with pytest.raises(VisibilityInputError, match="other supports"):
        vis.comparison(out, ["v.tiny", "other"])
    assert main(["--compare", "missing", "--out", str(out)]) == 2
    assert "run --name missing first" in capsys.readouterr().err


def test_bad_input_is_one_clear_line(vis_run, capsys):
    _, out, argv = vis_run
    before = (out / "v.tiny.csv").read_bytes()
    assert main(argv) == 2
    assert "--force" in capsys.readouterr().err and (out / "v.tiny.csv").read_bytes() == before
    with pytest.raises(SystemExit) as stop:
        main(["--name", "a b"])
    assert stop.value.code == 2 and "--name" in capsys.readouterr().err
    with pytest.raises(VisibilityInputError, match="at least 4 px"):
        vis.ceilings([], [], np.zeros((0, 13)), np.zeros((0, 13)), sizes=[2])
    from sdrlib.data.records import Record

    bare = [Record(study_id=f"s{i}", image_paths=[], findings="", impression="", labels={}, split="train")
            for i in range(3)]
    with pytest.raises(VisibilityInputError, match="meta\\['truth'\\]"):
        finding_signal(bare)
    few = [Record(study_id=f"s{i}", image_paths=[], findings="", impression="", labels={}, split="train",
                  meta={"truth": [{"kind": "mediastinum"}], "devices": []}) for i in range(3)]
    with pytest.raises(VisibilityInputError, match="at least 10"):
        finding_signal(few)


def test_image_features_refuses_what_is_not_a_greyscale_uint8_image():
    from sdrlib.data.stats import image_features

    x = image_features([np.full((12, 12), 7, np.uint8), np.arange(144, dtype=np.uint8).reshape(12, 12)], 4)
    assert x.shape == (2, 16) and x.dtype == np.float32
    with pytest.raises(ValueError, match="greyscale uint8"):
        image_features([np.zeros((4, 4, 3), np.uint8)])
    with pytest.raises(ValueError, match="greyscale uint8"):
        image_features([np.zeros((4, 4), np.float32)])
    with pytest.raises(ValueError, match="no images"):
        image_features([])


def _blob_images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 16, 16)`` noise images; the first label is a small bright square at a random place, the second a
    coin flip the images do not show, the rest never positive."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 16, 16)).astype(np.float32)
    y = np.zeros((n, len(OBSERVATIONS)), dtype=int)
    y[:, 0] = rng.random(n) < 0.3
    y[:, 1] = rng.random(n) < 0.3
    for i in np.flatnonzero(y[:, 0]):
        r, c = rng.integers(0, 14, 2)
        x[i, r:r + 2, c:c + 2] += 4.0
    return x, y


def test_the_cnn_ceiling_reads_a_finding_wherever_it_lands_where_the_linear_one_cannot():
    """A small mark at a random place: the position-tolerant ceiling reads it (AUROC near 1), the linear pixel
    ceiling barely does; a label the images do not show stays near chance in both; a label with no positives is NaN."""
    from sdrlib.experiments.sft_start import probe_ceiling

    xf, yf = _blob_images(400, 0)
    xs, ys = _blob_images(200, 1)
    cnn = vis.cnn_ceiling(xf, yf, xs, ys, epochs=6, seed=0, threads=1, bootstrap=200)
    assert list(cnn.columns) == ["observation", "n_pos_fit", "n_pos_score", "auroc_cnn", "auroc_cnn_lo",
                                 "auroc_cnn_hi", "f1_cnn"]
    lin = probe_ceiling(xf.reshape(400, -1), yf, xs.reshape(200, -1), ys)
    assert cnn.auroc_cnn[0] > 0.95 and cnn.f1_cnn[0] > 0.8
    assert lin.auroc[0] < cnn.auroc_cnn[0] - 0.15
    assert cnn.auroc_cnn_lo[0] <= cnn.auroc_cnn[0] <= cnn.auroc_cnn_hi[0]
    assert 0.35 < cnn.auroc_cnn[1] < 0.65
    assert cnn.iloc[2:][["auroc_cnn", "f1_cnn"]].isna().all().all()
    again = vis.cnn_ceiling(xf, yf, xs, ys, epochs=6, seed=0, threads=1, bootstrap=200)
    pd.testing.assert_frame_equal(cnn, again)


@pytest.mark.parametrize("bad, match", [
    (dict(x_fit=np.zeros((10, 4, 5))), "one size"),
    (dict(y_fit=np.zeros((10, 3), dtype=int)), "targets"),
    (dict(y_score=np.full((6, len(OBSERVATIONS)), 2)), "targets"),
    (dict(x_score=np.full((6, 4, 4), np.nan, dtype=np.float32)), "NaN"),
    (dict(epochs=0), "epochs"),
    (dict(holdout=1.0), "holdout"),
])
def test_the_cnn_ceiling_names_bad_input(bad, match):
    kw = dict(x_fit=np.zeros((10, 4, 4), np.float32), y_fit=np.zeros((10, len(OBSERVATIONS)), dtype=int),
              x_score=np.zeros((6, 4, 4), np.float32), y_score=np.zeros((6, len(OBSERVATIONS)), dtype=int))
    kw.update(bad)
    with pytest.raises(VisibilityInputError, match=match):
        vis.cnn_ceiling(**kw)


def test_the_command_writes_the_cnn_ceiling_beside_the_linear_ones(vis_run, tmp_path):
    """``--ceiling both`` adds the position-tolerant columns to the linear ones and records its settings."""
    _, out, argv = vis_run  # the same profile and data; another output folder (--out, --name: the last one counts)
    argv = argv + ["--out", str(tmp_path)]
    assert main(argv + ["--ceiling", "both", "--cnn-epochs", "1", "--name", "v.cnn"]) == 0
    ceil = pd.read_csv(tmp_path / "v.cnn.csv")
    assert list(ceil.columns) == ["observation", "n_pos_fit", "n_pos_score", "auroc_8", "f1_8", "auroc_16", "f1_16",
                                  "auroc_cnn", "auroc_cnn_lo", "auroc_cnn_hi", "f1_cnn"]
    info = json.loads((tmp_path / "v.cnn.json").read_text())
    assert info["ceiling"] == "both" and info["cnn"]["epochs"] == 1 and info["cnn"]["image_size"] == 32
    with pytest.raises(SystemExit) as stop:
        main(argv + ["--ceiling", "cnn", "--cnn-epochs", "0", "--name", "v.bad"])
    assert stop.value.code == 2 and not (tmp_path / "v.bad.csv").exists()
