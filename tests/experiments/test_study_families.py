"""The GRPO study's families by role (sdrlib.experiments.study.families): the study on record's arms give the
primary and secondary rows and answer they gave before there was a controls family; the controls (R_fmt, the noise
reward) are never in the primary family, but in one of their own (each vs SFT, each reward vs the noise control, or
R_fmt without it) with Holm over its own rows; the answer's third sentence; the Markdown and the table command's
controls sections."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from test_study_tables import _scores, _write, smoke  # noqa: F401  (smoke: the module fixture)

from sdrlib.experiments.study import families
from sdrlib.experiments.study import runs as study

ROOT = Path(__file__).resolve().parents[2]
#: the study on record's comparisons, as its table (docs/evidence/study/table.csv) holds them
RECORD_PAIRS = [("chamfer_recall_1", "sft"), ("chamfer", "sft"), ("exact", "sft"), ("hausdorff", "sft"),
                ("chamfer_recall_1", "exact"), ("chamfer", "exact"), ("hausdorff", "exact")]
ARMS = ("sft", "exact", "chamfer", "hausdorff")


def _old_table(scores, configs, n_studies, n_resamples=100):
    """The table as study_table made it before the controls family: every trained configuration vs SFT, then vs
    R_exact, in a primary and a secondary family (each row its own resamples: the same floats as shared ones)."""
    from sdrlib.experiments.tables import significance_table
    from sdrlib.metrics.verdict import family_verdicts

    trained = [c for c in configs if c != "sft"]
    pairs = [(c, "sft") for c in trained] + [(c, "exact") for c in trained if c != "exact"]
    parts = []
    for fam, ms in (("primary", study.PRIMARY), ("secondary", study.SECONDARY)):
        x = significance_table(scores, pairs, list(ms), n_resamples=n_resamples)
        parts.append(family_verdicts(x[x.section == "findings"].reset_index(drop=True), n_studies=n_studies)
                     .assign(family=fam))
    return pd.concat(parts, ignore_index=True)


def test_the_records_configurations_give_todays_pairs():
    from sdrlib.config import load_profile
    from sdrlib.rewards import reward_label

    rewards = list(load_profile("study_blind_start").grpo.rewards)
    assert not set(rewards) & set(families.CONTROLS)
    configs = sorted(["sft", *rewards], key=lambda c: f"{c}_s0.json.gz")  # as the table reads the files: by name
    assert study.study_pairs(configs) == RECORD_PAIRS and study.control_pairs(configs) == []
    t = pd.read_csv(ROOT / "docs" / "evidence" / "study" / "table.csv")
    labels = [(reward_label(a), reward_label(b)) for a, b in RECORD_PAIRS]
    for fam in ("primary", "secondary"):
        rows = t[t.family == fam]
        assert list(dict.fromkeys(zip(rows.A, rows.B))) == labels, fam
    assert set(t.family) == {"primary", "secondary"}


def test_the_records_arms_give_todays_table_and_answer():
    sc = _scores(configs=(*ARMS, "chamfer_recall_1"), n=20)
    t = study.study_table(sc, n_studies=20, n_resamples=100)
    old = _old_table(sc, [*ARMS, "chamfer_recall_1"], 20)
    pd.testing.assert_frame_equal(t, old, check_exact=True)
    answer = study.study_answer(t)
    assert len(answer) == 2 and not any("drift" in a for a in answer)
    assert answer[0].startswith("Do set-distance rewards beat SFT after GRPO? R_Cham: ")
    assert answer[0].index("R_Haus: ") < answer[0].index("R_Cham_rec1: ") < answer[0].index("R_exact: ")
    assert study.answer_block(t) == "\n\n".join(answer) + "\n\n" + study.study_markdown(t, compact=True)


def test_the_committed_answer_block_is_the_answer_and_the_compact_primary_table():
    t = pd.read_csv(ROOT / "docs" / "evidence" / "study" / "table.csv")
    assert study.answer_block(t) == "\n\n".join(study.study_answer(t)) + "\n\n" + study.study_markdown(t, compact=True)
    assert families.CONTROLS_HEADING not in study.answer_block(t)


@pytest.mark.parametrize("controls", [("fmt", "noise"), ("noise",), ("fmt",)])
def test_controls_are_never_in_the_primary_family(controls):
    """The primary and secondary rows with controls are those without them, float for float (same Holm family);
    the controls family holds each control vs SFT and each reward vs the noise control (R_fmt without it), with
    Holm over its own rows."""
    sc = _scores(configs=(*ARMS[:2], *controls, *ARMS[2:]), n=20)
    t = study.study_table(sc, n_studies=20, n_resamples=100)
    plain = study.study_table({k: v for k, v in sc.items() if k[0] not in controls}, n_studies=20, n_resamples=100)
    paper = t[t.family != "controls"].reset_index(drop=True)
    pd.testing.assert_frame_equal(paper, plain, check_exact=True)
    assert not (set(paper.A) | set(paper.B)) & families.CONTROL_LABELS
    c = t[t.family == "controls"]
    base = "C-noise" if "noise" in controls else "R_fmt"
    want = [({"fmt": "R_fmt", "noise": "C-noise"}[k], "SFT") for k in controls]
    want += [(a, base) for a in ("R_exact", "R_Cham", "R_Haus")]
    assert list(dict.fromkeys(zip(c.A, c.B))) == want
    assert {m.split("@")[0] for m in c.metric} == set(study.PRIMARY)
    assert (c.family_size == len(c)).all() and (paper.groupby("family").family_size.first() == 10).all()
    assert list(dict.fromkeys(t.family)) == ["primary", "secondary", "controls"]


def test_the_answers_third_sentence_reads_the_controls_family():
    sc = _scores(configs=("sft", "fmt", "noise", "exact", "hausdorff", "chamfer"), n=20)
    t = study.study_table(sc, n_studies=20, n_resamples=100)
    t.loc[(t.family == "controls") & (t.A == "R_Cham") & t.metric.str.startswith("bertscore"), "verdict"] = "above"
    answer = study.study_answer(t)
    assert len(answer) == 3
    for sentence in answer[:2]:  # the paper's questions: no control, R_Cham and R_Haus first
        assert "C-noise" not in sentence and "R_fmt" not in sentence
        assert sentence.index("R_Cham: ") < sentence.index("R_Haus: ")
    assert answer[0].index("R_Haus: ") < answer[0].index("R_exact: ")
    third = answer[2]
    assert third.startswith("Is it the reward or GRPO's drift? The controls vs SFT: C-noise: BERTScore F1 ")
    assert third.index("R_fmt: ") < third.index("The rewards vs C-noise: R_Cham: BERTScore F1 above (")
    assert third.index("R_Cham: ") < third.index("R_Haus: ") < third.index("R_exact: ")
    for _, r in t[t.family == "controls"].iterrows():  # every direction word is the rule's verdict of its row
        assert f"{r.verdict} ({r['diff']:+.3f}, detectable {r.mde:.3f}, {int(r.n_same_sign)} of" in third
    assert study.study_answer(t, controls=None) == answer[:2]
    fallback = study.study_answer(study.study_table({k: v for k, v in sc.items() if k[0] != "noise"}, n_studies=20,
                                                    n_resamples=100))
    assert "The controls vs SFT: R_fmt: " in fallback[2] and "The rewards vs R_fmt: R_Cham: " in fallback[2]


def test_the_controls_markdown_and_a_study_of_controls_only():
    sc = _scores(configs=("sft", "noise", "fmt", "chamfer"), n=20)
    t = study.study_table(sc, n_studies=20, n_resamples=100)
    md = study.study_markdown(t, family="controls").splitlines()
    assert len(md) == 2 + (t.family == "controls").sum()
    assert [x.split(" | ")[0] for x in md[2:]] == ["| C-noise vs SFT"] * 2 + ["| R_fmt vs SFT"] * 2 + \
        ["| R_Cham vs C-noise"] * 2
    assert all("| none (control) |" in x for x in md[2:])
    block = study.answer_block(t)
    assert f"\n\n{families.CONTROLS_HEADING}\n\n{study.study_markdown(t, family='controls', compact=True)}" in block
    only = study.study_table({k: v for k, v in sc.items() if k[0] in ("sft", "noise")}, n_studies=20,
                             n_resamples=100)
    assert set(only.family) == {"controls"} and list(dict.fromkeys(zip(only.A, only.B))) == [("C-noise", "SFT")]
    answer = study.study_answer(only)
    assert len(answer) == 1 and answer[0].startswith("Is it the reward or GRPO's drift? The controls vs SFT: C-noise")
    assert study.answer_block(only).startswith(answer[0] + f"\n\n{families.CONTROLS_HEADING}")


def test_the_table_command_writes_the_controls_sections(smoke, tmp_path, monkeypatch, capsys):  # noqa: F811
    """``table --markdown --resample-seeds 0 1 --answer-block`` on runs with the noise control: the Markdown has the
    controls family's table and its verdicts under each resampling seed, each in a section of its own, and the
    answer block the third sentence and the compact controls table."""
    from sdrlib.experiments.study import cli
    from sdrlib.reports import build_template

    _, test = smoke
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "root"))
    rng = np.random.default_rng(1)

    def gens(p_own):
        return [build_template(*((r.findings, r.impression) if rng.random() < p_own else
                                 (test[int(rng.integers(len(test)))].findings, "Other.")))
                for r in test]

    runs = {(c, s): gens(p) for c, p in (("sft", 0.5), ("noise", 0.4), ("chamfer", 0.8)) for s in (0, 1)}
    ev = _write(tmp_path / "ev", test, runs)
    md, table, page = tmp_path / "t.md", tmp_path / "t.csv", tmp_path / "page.md"
    page.write_text("Before.\n<!-- study-answer:start -->\nold\n<!-- study-answer:end -->\nAfter.\n", encoding="utf-8")
    rc = cli.main(["table", "--profile", "smoke", "--evidence", str(ev), "--set", "metrics.bertscore.enabled=false",
                   "--set", "data.n_test=6", "--out", str(table), "--markdown", str(md), "--resample-seeds", "0", "1",
                   "--answer-block", str(page)])
    assert rc == 0
    t = pd.read_csv(table)
    assert list(dict.fromkeys(zip(t.family, t.A, t.B))) == [("primary", "R_Cham", "SFT"), ("secondary", "R_Cham", "SFT"),
                                                            ("controls", "C-noise", "SFT"),
                                                            ("controls", "R_Cham", "C-noise")]
    text = md.read_text(encoding="utf-8")
    assert text.startswith(cli.OWN_START[("table", "--markdown")][0]) and "Is it the reward or GRPO's drift?" in text
    assert f"{cli.FAMILY_HEADINGS['controls']}\n\n{study.study_markdown(t, family='controls')}" in text
    paper, controls = text.split("**The verdicts under other resampling seeds**")[1].split(
        "**The controls' verdicts under other resampling seeds**")
    assert "| C-noise vs SFT |" not in paper and "| R_Cham vs SFT |" in paper
    assert "| C-noise vs SFT |" in controls and "| R_Cham vs C-noise |" in controls
    assert page.read_text(encoding="utf-8") == ("Before.\n<!-- study-answer:start -->\n" + study.answer_block(t)
                                                + "\n<!-- study-answer:end -->\nAfter.\n")
    capsys.readouterr()
