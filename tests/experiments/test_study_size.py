"""sdrlib.experiments.study.size: seeds and test studies for a detectable effect of the paper's size."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdrlib.experiments.study.size import PAPER_EFFECTS, size_study, study_plan
from sdrlib.metrics.verdict import VerdictInputError, interval_se


def _table():
    return pd.DataFrame({"A": ["R_Cham", "R_Cham", "R_exact"], "B": ["SFT", "SFT", "SFT"],
                         "metric": ["bertscore_f1", "clinical_f1_macro14", "bleu_c4"],
                         "ci_low": [-0.012, -0.08, 0.0], "ci_high": [0.017, 0.06, 0.0],
                         "seed_sd": [0.004, 0.02, np.nan]})


def test_studies_scale_with_the_square_of_the_standard_error_over_the_target():
    s = size_study(_table(), n_studies=100, m=2)
    assert list(s.metric) == ["bertscore_f1", "clinical_f1_macro14"]  # a metric without a target is not sized
    z = stats.norm.ppf(1 - 0.025 / 2) + stats.norm.ppf(0.8)
    se = interval_se(-0.012, 0.017)
    assert s.studies_for_target[0] == math.ceil(100 * (z * se / PAPER_EFFECTS["bertscore_f1"]) ** 2)
    assert s.mde_study_now[0] == pytest.approx(z * se) and (s.family_size == 2).all()
    assert s.seeds_for_target[0] >= 2 and s.seeds_for_target[1] >= s.seeds_for_target[0]
    suite = _table().assign(metric=["bertscore_f1@all-mpnet-base-v2/L12", "clinical_f1_macro14@labeler", "bleu_c4"])
    assert size_study(suite, n_studies=100, m=2).studies_for_target.tolist() == s.studies_for_target.tolist()


def test_the_plan_takes_the_largest_need_and_the_floors():
    s = size_study(_table(), n_studies=100, m=2)
    plan = study_plan(s)
    assert plan["n_studies"] == max(400, int(s.studies_for_target.max()))
    assert plan["n_seeds"] == max(5, int(s.seeds_for_target.max()))
    assert study_plan(s.assign(studies_for_target=1, seeds_for_target=np.nan)) == {"n_studies": 400, "n_seeds": 5}


def test_bad_input_is_named():
    with pytest.raises(VerdictInputError, match="lacks"):
        size_study(_table().drop(columns="ci_low"), n_studies=100)
    with pytest.raises(VerdictInputError, match="n_studies"):
        size_study(_table(), n_studies=0)
    with pytest.raises(VerdictInputError, match="no comparison"):
        study_plan(size_study(_table()[_table().metric == "bleu_c4"], n_studies=100))
