"""The SynthCXR manifest covers every image: a damaged generated folder is regenerated, an intact one is not."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sdrlib.data import DataError
from sdrlib.data._common import read_table, resolve_data_path
from sdrlib.data.iuxray import iuxray_split_of, load_iuxray
from sdrlib.data.mimic import load_mimic
from sdrlib.data.rexgradient import load_rexgradient
from sdrlib.errors import SDRError
from sdrlib.metrics import EvaluationInputError, evaluate_reports, score_reports
from sdrlib.metrics.clinical import clinical_results, label_matrix, normalize_labels, strata_from_labels
from sdrlib.reports import build_template

CHEAP = ["bleu", "rouge", "chrf"]  # offline, fast, no model weights
REF = {"findings": "The heart is enlarged. Small left pleural effusion.", "impression": "Cardiomegaly."}
PRED = build_template("The heart is enlarged. Small left pleural effusion.", "Cardiomegaly.")
CHEXPERT_14 = ['No Finding', 'Enlarged Cardiomediastinum', 'Cardiomegaly', 'Lung Opacity', 'Lung Lesion',
               'Edema', 'Consolidation', 'Pneumonia', 'Atelectasis', 'Pneumothorax', 'Pleural Effusion',
               'Pleural Other', 'Fracture', 'Support Devices']


def _truncate(path: Path) -> Path:
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    return path


# --------------------------------------------------------------------------- SynthCXR manifest
@pytest.fixture()
def small_synth(sdr_root):
    from sdrlib.config import load_profile
    from sdrlib.data.synthcxr import ensure_dataset

    cfg = load_profile("smoke", {"data.n_train": 4, "data.n_val": 2, "data.n_test": 2, "data.image_size": 48})
    return cfg, ensure_dataset(cfg)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("damage", ["delete_image", "truncate_image", "flip_image_byte", "delete_parquet",
                                    "manifest_drops_image"])
def test_ensure_dataset_regenerates_damaged_folders(small_synth, damage):
    from sdrlib.data import load_split
    from sdrlib.data.synthcxr import ensure_dataset
    from sdrlib.data.synthcxr.dataset import _config_key, _manifest_problem

    cfg, folder = small_synth
    before = _snapshot(folder)
    img = folder / "images" / "val" / "syn-val-00001.png"
    if damage == "delete_image":
        img.unlink()
    elif damage == "truncate_image":
        _truncate(img)
    elif damage == "flip_image_byte":
        raw = bytearray(img.read_bytes())
        raw[-20] ^= 0xFF
        img.write_bytes(bytes(raw))               # same size, different hash
    elif damage == "delete_parquet":
        (folder / "test.parquet").unlink()
    else:
        man = json.loads((folder / "manifest.json").read_text())
        del man["files"]["images/val/syn-val-00001.png"]
        (folder / "manifest.json").write_text(json.dumps(man))
    want = _config_key(cfg.seed, {"train": 4, "val": 2, "test": 2}, 48)
    problem = _manifest_problem(folder, want)
    assert problem is not None
    assert ("test.parquet" if damage == "delete_parquet" else
            "1 val images for 2" if damage == "manifest_drops_image" else "syn-val-00001.png") in problem
    with pytest.warns(UserWarning, match="damaged"):
        assert ensure_dataset(cfg) == folder
    assert _snapshot(folder) == before and _manifest_problem(folder, want) is None
    assert len(load_split(cfg, "val")) == 2


def test_intact_folder_is_not_regenerated(small_synth):
    import warnings

    from sdrlib.data.synthcxr import ensure_dataset, read_manifest

    cfg, folder = small_synth
    man = read_manifest(folder)
    assert sum(k.endswith(".png") for k in man["files"]) == 8
    assert set(man["file_sizes"]) == set(man["files"])
    stamp = os.stat(folder / "manifest.json").st_mtime_ns
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ensure_dataset(cfg)
    assert os.stat(folder / "manifest.json").st_mtime_ns == stamp
