"""The distance-family registry, bad input round five: a name means one distance everywhere; a family's functions
are checked when it registers; a reference answering in the wrong shape is named."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import toy_family
from sdrlib.distances import DistanceSpecError, get, set_distance
from sdrlib.distances.registry import FAMILIES, register_family, unregister_family


def test_a_family_named_like_a_registered_setting_is_refused():
    fam = dataclasses.replace(toy_family.FAMILY, name="partial_adaptive")
    with pytest.raises(DistanceSpecError, match="'partial_adaptive' is already the setting 'partial_adaptive' of "
                                                "family 'partial'"):
        register_family(fam)
    assert "partial_adaptive" not in FAMILIES and get("partial_adaptive").family == "partial"


@pytest.mark.parametrize("field, value", [("kernel", None), ("kernel", 3), ("reference", None),
                                          ("kernel", "no colon"), ("neg_kernel", "mod:")])
def test_a_family_function_that_is_neither_a_function_nor_module_function_is_refused(field, value):
    fam = dataclasses.replace(toy_family.FAMILY, name="bad_toy", **{field: value})
    with pytest.raises(DistanceSpecError, match=f"family 'bad_toy': {field} must be a function or a "
                                                "'module:function' string"):
        register_family(fam)
    assert "bad_toy" not in FAMILIES


@pytest.mark.parametrize("answer", [0.5, [0.5, True], (0.5,), ("0.5", True), None])
def test_a_reference_answering_in_the_wrong_shape_is_named(answer):
    fam = dataclasses.replace(toy_family.FAMILY, name="shape_toy", reference=lambda A, B, M=None: answer)
    register_family(fam)
    try:
        A = np.eye(3)[:2]
        with pytest.raises(DistanceSpecError, match=r"family 'shape_toy': its reference returned .* returns "
                                                    r"\(value, converged\)"):
            set_distance(A, A, "shape_toy")
    finally:
        unregister_family("shape_toy")

