"""RadGraph F1 in the metric suite, checked against the real ``radgraph`` package (0.1.18, dev extra).

Only the package's neural annotator is replaced (:mod:`radgraph_standin`: no weights are installed or
downloaded); ``F1RadGraph`` itself, its handling of empty reports, its level-major output and
``compute_reward`` are the package's. Every per-sample value of the three levels the suite reports
(``radgraph_simple`` / ``_partial`` / ``_complete``) must equal what the package computes for that pair
alone, and ``compute_reward`` on the pair's annotations.
"""

from __future__ import annotations

import numpy as np
import pytest

from radgraph_standin import StandInAnnotator, install

from sdrlib.rewards import reward_label

LEVELS = ("simple", "partial", "complete")

# (prediction, reference) per sample and section; n = 7 (not 3, so a transposed layout cannot pass by shape)
FINDINGS = [
    ("heart and lung opacity.", "lung and heart opacity."),                       # levels differ: 1, 1, 2/3
    ("opacity in the left lower lobe.", "left lower lobe opacity."),              # 1, 3/4, 3/4
    ("left pleural effusion. no pneumothorax.", "right pleural effusion. possible pneumothorax."),
    ("", "the heart is enlarged."),                                               # empty prediction
    ("quartz xylophones hum.", "mild pulmonary edema."),                          # no entity in the prediction
    ("the lungs are clear. no effusion.", "the lungs are clear. no effusion."),  # identical
    ("heart size is normal.", "heart size is normal. left lower lobe atelectasis."),
]
IMPRESSION = [
    ("opacity.", "left lower lobe opacity."),
    ("no acute disease.", ""),                                                    # empty reference: undefined
    ("effusion.", "effusion."),
    ("   ", "cardiomegaly."),                                                     # whitespace only: empty
    ("pneumothorax.", "no pneumothorax."),
    ("normal chest.", "normal chest."),
    ("edema.", "edema and effusion."),
]


@pytest.fixture()
def standin(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path / "cache")
    return StandInAnnotator(model_type="radgraph")


def _package_values(hyp: str, ref: str) -> tuple[float, float, float]:
    """The package's own F1RadGraph on this one pair (its empty-report rule included)."""
    from radgraph import F1RadGraph

    _, rewards, _, _ = F1RadGraph(reward_level="all", model_type="radgraph")(refs=[ref], hyps=[hyp])
    return tuple(float(level[0]) for level in rewards)


def _compute_reward(ann: StandInAnnotator, hyp: str, ref: str) -> tuple[float, float, float]:
    """``radgraph.rewards.compute_reward`` on the pair's annotations; F1RadGraph's value 0 for an empty report."""
    from radgraph.rewards import compute_reward

    if not hyp or not ref:
        return (0.0, 0.0, 0.0)
    return tuple(float(v) for v in compute_reward(ann([hyp])["0"], ann([ref])["0"], "all"))


def test_package_output_is_level_major(standin):
    """What the suite has to undo: a tuple of three per-level lists, one value per report each."""
    from radgraph import F1RadGraph

    hyps, refs = [h for h, _ in FINDINGS], [r for _, r in FINDINGS]
    mean, rewards, _, _ = F1RadGraph(reward_level="all", model_type="radgraph")(refs=refs, hyps=hyps)
    assert len(rewards) == 3 and all(len(level) == len(FINDINGS) for level in rewards)
    assert rewards[0][0] == 1.0 and rewards[2][0] == pytest.approx(2 / 3)   # sample 0: simple 1, complete 2/3
    assert mean[1] == pytest.approx(np.mean(rewards[1]))


def test_every_per_sample_value_matches_the_package(standin):
    from sdrlib.metrics import score_reports

    preds = [{"findings": f, "impression": i} for (f, _), (i, _) in zip(FINDINGS, IMPRESSION)]
    refs = [{"findings": f, "impression": i} for (_, f), (_, i) in zip(FINDINGS, IMPRESSION)]
    preds.append(None)                                   # a failed generation: every section empty
    refs.append({"findings": "small left pleural effusion.", "impression": "effusion."})
    s = score_reports(preds, refs, sections=("findings", "impression", "report"), metrics=["radgraph"])
    assert s.unavailable == {}
    checked = differing = 0
    for sec in ("findings", "impression", "report"):
        got = np.column_stack([s.result(sec, f"radgraph_{lvl}@radgraph").sample for lvl in LEVELS])
        assert got.shape == (len(preds), 3)
        for i in range(len(preds)):
            hyp = s_text(preds[i], sec)
            ref = s_text(refs[i], sec)
            if not ref:  # the suite's rule for every metric: no reference section, sample undefined
                assert np.isnan(got[i]).all(), (sec, i)
                continue
            want = _package_values(hyp, ref)
            assert want == pytest.approx(_compute_reward(standin, hyp, ref)), (sec, i)
            assert got[i].tolist() == pytest.approx(list(want)), (sec, i, hyp, ref)
            checked += 1
            differing += len(set(want)) > 1
        defined = ~np.isnan(got[:, 0])
        for j, lvl in enumerate(LEVELS):  # corpus value: the mean over defined samples, per level
            assert s.result(sec, f"radgraph_{lvl}@radgraph").corpus == pytest.approx(got[defined, j].mean())
    assert checked == 3 * len(preds) - 1 and differing >= 3  # the levels differ, so a mix-up cannot pass


def s_text(x, sec: str) -> str:
    """The section text as the suite scores it (stripped; ``report`` = both sections joined)."""
    if x is None:
        return ""
    if sec == "report":
        return " ".join(t.strip() for t in (x["findings"], x["impression"]) if t.strip())
    return x[sec].strip()


# --------------------------------------------------------------------------- the paper's tables (smoke profile)
@pytest.fixture(scope="module")
def smoke():
    """The smoke profile and its synthetic test / train reports (SynthCXR's texts, without drawing images)."""
    from sdrlib.config import load_profile
    from sdrlib.data.synthcxr import generate_report

    cfg = load_profile("smoke")
    test = [generate_report(cfg.seed, "test", i) for i in range(cfg.data.n_test)]
    train = [generate_report(cfg.seed, "train", i) for i in range(cfg.data.n_train)]
    return cfg, test, train


def _grpo_generations(cfg, train, n):
    """Stand-in test generations for SFT and every GRPO configuration of the profile: other studies' reports."""
    from sdrlib.experiments import posttrain
    from sdrlib.reports import build_template

    configs = ["sft", *[r for r in cfg.grpo.rewards if r != "sft"]]
    gens = {(c, s): [build_template(train[(j * 7 + i) % len(train)].findings, train[(j * 7 + i) % len(train)].impression)
                     for i in range(n)] for j, c in enumerate(configs) for s in posttrain.seeds_of(cfg)}
    return configs, gens


def _grpo_tables(cfg, test, train, **kw):
    from sdrlib.experiments import posttrain

    configs, gens = _grpo_generations(cfg, train, len(test))
    scores = posttrain.score_all(cfg, gens, test, **kw)
    long = posttrain.scores_long(scores, posttrain.model_name(cfg))
    tables = {g: posttrain.reward_table(long, "findings", g, configs) for g in ("headline", "clinical")}
    return configs, scores, tables


def test_smoke_grpo_headline_and_clinical_tables_carry_radgraph(standin, smoke):
    from sdrlib.experiments import posttrain

    cfg, test, train = smoke
    configs, scores, tables = _grpo_tables(cfg, test, train, metrics=["clinical", "radgraph", "comet"])
    head = tables["headline"].set_index("Metric")
    labels = [reward_label(c) for c in configs]
    seed = posttrain.seeds_of(cfg)[0]
    for c, lbl in zip(configs, labels):  # one seed: the cell is that run's corpus value, ±0
        want = scores[(c, seed)].result("findings", "radgraph_complete@radgraph").corpus
        assert head.loc["RadGraph F1", lbl].strip("*") == f"{want:.3f} ±0.000"
    clin = tables["clinical"].set_index("Metric")
    assert list(clin.index[:3]) == ["RG-E", "RG-ER", "RadGraph F1"]
    for name, lvl in (("RG-E", "simple"), ("RG-ER", "partial")):
        want = scores[(configs[1], seed)].result("findings", f"radgraph_{lvl}@radgraph").corpus
        assert clin.loc[name, labels[1]].strip("*") == f"{want:.3f} ±0.000"
    assert head.loc["COMET", labels[0]].startswith("not computed: COMET needs")   # no checkpoint: named, kept
    assert head.loc["COMET", labels[1]] == "not computed"
    assert head.loc["BERTScore F1", labels[0]].startswith("not computed: no bertscore_f1 values")  # not requested
    print("\n" + tables["headline"].to_markdown(index=False))


def test_smoke_selection_table_3_carries_radgraph(standin, smoke, small_encoder):
    """Notebook 05's path on smoke-sized inputs: bank sweep, MBR, candidate metrics, Table 3 (best vs random)."""
    from sdrlib import selection as sel
    from sdrlib.distances import get as get_distance
    from sdrlib.embedding import ReportBank, SentenceEmbedder
    from sdrlib.reports import build_template

    cfg, test, train = smoke
    sc = cfg.selection
    emb = SentenceEmbedder(small_encoder)
    bank = ReportBank.build(emb, [r.findings for r in train], [r.impression for r in train])
    cands = [[build_template(train[(5 * i + j) % len(train)].findings, train[(5 * i + j) % len(train)].impression)
              for j in range(sc.n_candidates)] for i in range(len(test))]
    neg = any(get_distance(n).negation_aware for n in sc.names)
    sets = sel.candidate_sets(cands, emb)
    pres = sel.candidate_presence(cands) if neg else None
    res = sel.bank_distances(sets, bank, sc.names, n_candidates=sc.n_candidates, study_ids=[r.study_id for r in test],
                             aggregations=sc.aggregations, knn_k=sc.knn_k, presence=pres,
                             bank_presence=sel.bank_presence_of(bank) if neg else None, progress=None)
    mbr = sel.mbr_scores(sets, sc.names, n_candidates=sc.n_candidates, presence=pres)
    mscores = sel.score_candidate_metrics(cands, test, metrics=["rouge", "clinical", "radgraph"])
    ev = sel.evaluate_methods(sel.method_choices(res, mbr), sel.pick_metrics(mscores, "findings"), sc.n_candidates,
                              strata=mscores.strata[:: sc.n_candidates]).assign(policy="SFT", section="findings")
    metrics = [m for m in sel.HEADLINE_METRICS if m in set(ev.metric)]
    missing = sel.not_computed(mscores, "findings")
    t3 = sel.best_vs_random(ev, metrics, not_computed=missing).set_index("metric")
    assert {"RG-F1", "RG-E"} <= set(metrics)
    rg = mscores.result("findings", "radgraph_complete@radgraph")  # Table 3's RG-F1: the complete level
    assert t3.loc["RG-F1", "random"] == pytest.approx(sel.selected_result(rg, "random", sc.n_candidates).corpus)
    assert t3.loc["RG-F1", "oracle"] >= t3.loc["RG-F1", "best"] >= 0
    ent = mscores.result("findings", "radgraph_simple@radgraph")
    assert t3.loc["RG-E", "random"] == pytest.approx(sel.selected_result(ent, "random", sc.n_candidates).corpus)
    assert t3.loc["BS-F1", "best_method"].startswith("not computed: no bertscore_f1 values")  # not requested: named
    print("\n" + t3.reset_index().round(3).to_markdown(index=False))


# --------------------------------------------------------------------------- bad input
def _rows(table, name="RadGraph F1"):
    return table[table.Metric == name]


def test_package_missing_is_a_named_row(monkeypatch, smoke):
    import importlib.util

    from sdrlib import selection as sel

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "radgraph" else real(name, *a))
    cfg, test, train = smoke
    _, scores, tables = _grpo_tables(cfg, test[:4], train, metrics=["clinical", "radgraph"])
    s = next(iter(scores.values()))
    assert s.unavailable["radgraph"].startswith("package radgraph is not installed")
    for g, names in (("headline", ["RadGraph F1"]), ("clinical", ["RG-E", "RG-ER", "RadGraph F1"])):
        for name in names:
            r = _rows(tables[g], name)
            assert len(r) == 1 and r.iloc[0, 2].startswith("not computed: package radgraph is not installed"), (g, name)
    miss = sel.not_computed(s, "findings")
    assert set(miss) >= {"RG-F1", "RG-E"} and miss["RG-F1"].startswith("not computed: package radgraph")


def test_weights_missing_is_a_named_row(monkeypatch, tmp_path, smoke):
    from sdrlib.metrics import backends

    monkeypatch.setattr(backends, "_appdirs_cache", lambda app: tmp_path / app)  # an empty radgraph cache
    cfg, test, train = smoke
    _, scores, tables = _grpo_tables(cfg, test[:4], train, metrics=["radgraph", "rouge"])
    why = next(iter(scores.values())).unavailable["radgraph"]
    assert "is installed but its 'radgraph' model is not unpacked in" in why and str(tmp_path) in why
    assert _rows(tables["headline"]).iloc[0, 2] == f"not computed: {why}"


class _FailingAnnotator(StandInAnnotator):
    """Fails on its second call (the Impression section, after Findings went through), or on a marked text."""

    def __call__(self, hyps):
        if self.calls >= 1 or any("FAILME" in h for h in hyps):
            self.calls += 1
            raise RuntimeError("CUDA out of memory (stand-in)")
        return super().__call__(hyps)


def test_failure_mid_run_drops_every_section_and_names_it(standin, monkeypatch):
    import radgraph.radgraph as rg_module

    from sdrlib.metrics import score_reports

    monkeypatch.setattr(rg_module, "RadGraph", _FailingAnnotator)
    preds = [{"findings": f, "impression": i} for (f, _), (i, _) in zip(FINDINGS, IMPRESSION)]
    refs = [{"findings": f, "impression": i} for (_, f), (_, i) in zip(FINDINGS, IMPRESSION)]
    s = score_reports(preds, refs, metrics=["radgraph", "rouge"])
    assert s.unavailable["radgraph"] == "radgraph failed to run: RuntimeError: CUDA out of memory (stand-in)"
    for sec in s.sections:  # findings had been scored: dropped too, no half-scored table
        assert not [r for r in s.results[sec] if r.name.startswith("radgraph_")]
        assert s.result(sec, "rouge1").sample.shape == (len(preds),)   # the other metrics stay
    df = s.to_frame()
    assert df[df.metric == "unavailable/radgraph"].backend.tolist() == [s.unavailable["radgraph"]]


def test_annotator_that_cannot_be_built_is_named(standin, monkeypatch):
    """E.g. radgraph 0.1.18's tokenizer wrapper under transformers 5 (no ``encode_plus``), weights present."""
    import radgraph.radgraph as rg_module

    from sdrlib.metrics import score_reports

    def broken(*a, **k):
        raise AttributeError("BertTokenizer has no attribute encode_plus")

    monkeypatch.setattr(rg_module, "RadGraph", broken)
    s = score_reports(["<think> a </think> <answer> b </answer>"], [{"findings": "a.", "impression": "b."}],
                      metrics=["radgraph"])
    assert s.unavailable["radgraph"] == ("radgraph failed to run: RuntimeError: radgraph could not build its "
                                         "'radgraph' annotator: AttributeError: BertTokenizer has no attribute encode_plus")


def test_one_configuration_failing_is_named_in_its_cells(standin, monkeypatch, smoke):
    """A scorer failing on one system's generations: its cells say so, the other columns keep their values."""
    import radgraph.radgraph as rg_module

    from sdrlib.experiments import posttrain

    class FailOnMarker(StandInAnnotator):
        def __call__(self, hyps):
            if any("FAILME" in h for h in hyps):
                raise RuntimeError("annotator crashed (stand-in)")
            return super().__call__(hyps)

    monkeypatch.setattr(rg_module, "RadGraph", FailOnMarker)
    cfg, test, train = smoke
    configs, gens = _grpo_generations(cfg, train, 4)
    bad = (configs[1], posttrain.seeds_of(cfg)[0])
    gens[bad] = [g.replace("</answer>", " FAILME </answer>") for g in gens[bad]]
    scores = posttrain.score_all(cfg, gens, test[:4], metrics=["radgraph", "rouge"])
    long = posttrain.scores_long(scores, "m")
    row = _rows(posttrain.reward_table(long, "findings", "headline", configs)).iloc[0]
    assert row[reward_label(configs[0])].startswith(("0.", "**0.", "1.", "**1."))
    assert row[reward_label(configs[1])] == "not computed"
    assert long.attrs["unavailable"]["radgraph"] == (f"radgraph failed to run: RuntimeError: annotator crashed "
                                                      f"(stand-in) ({reward_label(bad[0])}/s{bad[1]})")


def test_wrong_output_layout_is_refused_not_reshaped(standin, monkeypatch):
    """A scorer returning samples x levels (not the documented level-major tuple) is named, not silently read."""
    import radgraph

    from sdrlib.metrics import score_reports

    class SampleMajor(radgraph.F1RadGraph):
        def forward(self, refs, hyps):
            mean, rewards, h, r = super().forward(refs, hyps)
            return mean, [tuple(x) for x in zip(*rewards)], h, r

    monkeypatch.setattr(radgraph, "F1RadGraph", SampleMajor)
    preds = [{"findings": f, "impression": "x."} for f, _ in FINDINGS]
    refs = [{"findings": r, "impression": "x."} for _, r in FINDINGS]
    s = score_reports(preds, refs, metrics=["radgraph"])
    assert "expected level-major (3, 7)" in s.unavailable["radgraph"]
    assert not [r for r in s.results["findings"] if r.name.startswith("radgraph_")]


# --------------------------------------------------------------------------- the one map of paper names
def test_paper_name_map_resolves_every_table_name_to_a_name_the_suite_writes(standin):
    """Every name a table asks for is in the map, and every suite name the map gives is one the suite writes
    (the bug this guards against: tables looking up 'radgraph' while the suite writes 'radgraph_complete@...')."""
    from sdrlib.experiments import posttrain
    from sdrlib import selection as sel
    from sdrlib.metrics import paper_names as pn
    from sdrlib.metrics import score_reports

    assert sum(len(m.names) for m in pn.PAPER_METRICS) == len({n for m in pn.PAPER_METRICS for n in m.names})
    assert all(m.basis in pn.BASES for m in pn.PAPER_METRICS)
    for names in [*pn.TABLES.values(), *posttrain.TABLE_GROUPS.values(), sel.HEADLINE_METRICS]:
        for n in names:
            pn.paper_metric(n)
    assert [pn.paper_metric(n).suite for n in ("RG-E", "RG-ER", "RadGraph F1", "RG-F1")] == [
        ("radgraph_simple",), ("radgraph_partial",), ("radgraph_complete",), ("radgraph_complete",)]
    s = score_reports([{"findings": "left pleural effusion.", "impression": "effusion."}],
                      [{"findings": "small left pleural effusion.", "impression": "effusion."}],
                      metrics=["bleu", "rouge", "meteor", "chrf", "clinical", "radgraph"],
                      settings={"meteor": {"wordnet_dir": None}})
    written = {r.name.split("@")[0] for r in s.results["findings"]}
    for m in pn.PAPER_METRICS:
        if m.group in ("bertscore", "comet"):  # need a backbone / checkpoint: their names are checked in
            continue                           # tests/metrics/test_metrics_suite.py (bertscore_f1@..., comet@...)
        assert set(m.suite) & written, (m.names, m.suite)
        assert pn.find(m.names[0], [r.name for r in s.results["findings"]]) is not None, m.names
    assert pn.find("METEOR", ["meteor_exact_stem@nltk"]) == "meteor_exact_stem@nltk"   # the stand-in without WordNet
    assert pn.find("RG-F1", ["radgraph_simple@radgraph"]) is None                   # never a prefix match
