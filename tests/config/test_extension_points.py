"""The four extension points follow one pattern: a toy distance family, dataset, metric group and reward method (the
four worked examples of docs/extending.md, run as one plugin) are loaded from one profile, their settings sections
validated by their own dataclasses, and each is then used through its ordinary entry point."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from sdrlib.config import ConfigError, load_profile
from sdrlib.paths import repo_root

DOC = repo_root() / "docs" / "extending.md"


def _doc_examples() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Four extension points, one pattern"):text.index("**Adding a reward method**")]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.fixture
def profile_file(tmp_path):
    examples = _doc_examples()
    assert len(examples) == 4, "docs/extending.md: one worked example per extension point"
    (tmp_path / "extensions.py").write_text("\n\n".join(examples), encoding="utf-8")
    path = tmp_path / "toy.yaml"
    path.write_text(textwrap.dedent("""\
        extends: smoke
        plugins: [extensions.py]
        data: {source: echo, echo: {n: 3}}
        distances: {names: [chamfer, max_cost]}
        metrics: {length: {unit: chars}}
        grpo: {rewards: [fmt, brevity], brevity: {words: 10}}
        pruning: {policies: [sft]}
        """), encoding="utf-8")
    yield path
    from sdrlib.data.registry import unregister_dataset
    from sdrlib.distances.registry import unregister_family
    from sdrlib.metrics.registry import unregister_metric_group
    from sdrlib.rewards import unregister_method

    unregister_family("max_cost")
    unregister_dataset("echo")
    unregister_metric_group("length")
    unregister_method("brevity")


def test_a_toy_extension_of_each_point_loads_from_one_profile(profile_file):
    from sdrlib.data import load_split
    from sdrlib.distances import set_distance
    from sdrlib.metrics.suite import metric_kwargs, score_reports
    from sdrlib.rewards import RewardScorer, parse_reward

    cfg = load_profile(str(profile_file))
    # each settings section is the extension's own dataclass, with the profile's values and the defaults
    assert type(cfg.data.echo).__name__ == "EchoSettings" and cfg.data.echo.n == 3
    assert type(cfg.metrics.length).__name__ == "LengthSettings" and cfg.metrics.length.unit == "chars"
    assert type(cfg.grpo.brevity).__name__ == "BrevitySettings" and cfg.grpo.brevity.words == 10
    # each extension through its entry point
    assert [r.study_id for r in load_split(cfg, "train")] == ["echo-train-0", "echo-train-1", "echo-train-2"]
    A, B = np.eye(3)[:2], np.eye(3)[1:]
    assert set_distance(A, B, "max_cost") == pytest.approx(0.5)  # orthogonal rows: cosine cost (1 - cos) / 2
    scores = score_reports(["<think> Heart. </think> <answer> Ok. </answer>"],
                           [{"findings": "Heart.", "impression": "Fine!"}], metrics=["length"], **{
                               k: v for k, v in metric_kwargs(cfg).items() if k == "settings"})
    assert scores.result("impression", "length_ratio").corpus == pytest.approx(3 / 5)  # chars: the profile's unit
    assert parse_reward("brevity").method == "brevity"
    scorer = RewardScorer("brevity", settings=cfg.grpo.brevity)
    b = scorer.score(["<think> Small effusion. </think> <answer> Effusion. </answer>"], ["a"], ["b"])
    assert b.total[0] == pytest.approx(1 + 0.8)  # R_fmt + (1 - 2 words / 10), the profile's words


def test_a_settings_value_outside_the_dataclass_constraints_is_refused(profile_file):
    load_profile(str(profile_file))
    with pytest.raises(ConfigError, match=r"data\.echo\.n"):
        load_profile(str(profile_file), {"data.echo.n": 0})
    with pytest.raises(ConfigError, match=r"metrics\.length\.unit"):
        load_profile(str(profile_file), {"metrics.length.unit": "lines"})
    with pytest.raises(ConfigError, match=r"metrics\.length"):
        load_profile(str(profile_file), {"metrics.length.width": 3})


def test_the_built_in_metric_groups_options_are_their_own_sections():
    """Each built-in group's options are declared once, by its settings dataclass, as a toy group's are: the profile's
    ``metrics.<group>`` section, handed to the suite by ``metric_kwargs``; ``metrics`` keeps the suite-wide keys."""
    import dataclasses

    from sdrlib.config import MetricsConfig
    from sdrlib.metrics.registry import GROUPS, metric_group
    from sdrlib.metrics.suite import metric_kwargs

    sections = GROUPS.settings_sections()
    assert {"bertscore", "clinical", "meteor", "comet", "radgraph"} <= set(sections)
    assert [f.name for f in dataclasses.fields(MetricsConfig)] == ["bootstrap", "allow_substitutes"]
    cfg = load_profile("cpu", {"metrics.meteor.wordnet_dir": None})
    for name, cls in sections.items():
        assert type(getattr(cfg.metrics, name)) is cls is metric_group(name).settings
        assert metric_kwargs(cfg)["settings"][name] is getattr(cfg.metrics, name)
    assert cfg.metrics.bertscore.model == "all-MiniLM-L6-v2" and cfg.metrics.meteor.wordnet_dir is None
    assert cfg.metrics.clinical == sections["clinical"]()  # the cpu profile keeps every clinical default


def test_the_four_registries_share_the_replace_and_removal_rules():
    from sdrlib.data.registry import DATASETS
    from sdrlib.distances.registry import FAMILIES
    from sdrlib.metrics.registry import GROUPS
    from sdrlib.rewards.spec import METHODS

    for registry, builtin in ((FAMILIES, "chamfer"), (DATASETS, "mimic"), (GROUPS, "rouge"), (METHODS, "fmt")):
        obj = registry[builtin]
        assert registry.is_builtin(builtin)
        assert registry.register(obj) is obj  # the same object again: no change
        with pytest.raises(registry.error, match="built in and cannot be removed"):
            registry.unregister(builtin)


def test_every_reward_method_module_is_a_declared_builtin():
    import pkgutil

    import sdrlib.rewards.methods as methods
    from sdrlib.rewards.spec import BUILTIN_METHODS

    found = {f"{methods.__name__}.{m.name}" for m in pkgutil.iter_modules(methods.__path__)}
    assert found == set(BUILTIN_METHODS)
