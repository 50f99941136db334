"""A SynthCXR study as the record shape the audit reads (study_id, findings, impression, labels, meta with the
ground-truth findings), for the reward-audit and reward-choice tests."""

from __future__ import annotations

from dataclasses import asdict
from types import SimpleNamespace

from sdrlib.data.synthcxr.dataset import generate_report


def synth_record(split: str, i: int) -> SimpleNamespace:
    """Study ``i`` of ``split`` (generator seed 3) with its truth in ``meta`` (what the audit's paraphrase needs)."""
    st = generate_report(3, split, i)
    truth = [{k: v for k, v in asdict(f).items() if v not in (None, False)} for f in st.truth]
    return SimpleNamespace(study_id=st.study_id, findings=st.findings, impression=st.impression, labels=st.labels,
                           meta={"truth": truth, "devices": st.devices})
