"""Setting names: :func:`get` (a registered name, ``family_value``, ``<setting>_raw``, ``<setting>_neg[_<c>]`` or a
hand-built spec, checked), :func:`distance_key` (one key for two spellings of a setting),
:func:`available_distances`, :func:`registry_table`, and :func:`register_family` (a family's name must not already
mean a setting of another family, which only the setting parser can tell). Leaves out building a setting from parameters
(:func:`~sdrlib.distances.registry.make_spec`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sdrlib.distances.errors import DistanceNameTypeError, DistanceSpecError, UnknownDistanceError
from sdrlib.distances.registry._family import FAMILIES, Family
from sdrlib.distances.registry._spec import (
    EXTENSIONS,
    REGISTRY,
    DistanceSpec,
    _check_contradiction,
    _check_params,
    make_spec,
)

if TYPE_CHECKING:
    import pandas as pd


_RAW_RE = re.compile(r"^(.+)_raw$")
_NEG_RE = re.compile(r"^(.+)_neg(?:_([0-9.eE+-]+))?$")


def available_distances(include_extensions: bool = False) -> list[str]:
    """Names of the registered settings: the paper's 15 in paper order, then ours with ``include_extensions``."""
    return list(REGISTRY) + (list(EXTENSIONS) if include_extensions else [])


def registry_table(include_extensions: bool = True) -> "pd.DataFrame":
    """The registry as a DataFrame: name, family, origin (``paper`` / ``sdr extension``), params, description.

    Example: ``registry_table().query("origin == 'paper'").shape[0] -> 15``.
    """
    import pandas as pd

    specs = list(REGISTRY.values()) + (list(EXTENSIONS.values()) if include_extensions else [])
    return pd.DataFrame([{"name": s.name, "family": s.family, "origin": s.origin,
                          "params": ", ".join([f"{k}={v}" for k, v in s.params.items()]
                                              + ([f"contradiction={s.contradiction}"] if s.negation_aware else [])),
                          "description": s.description} for s in specs])


def distance_key(name: "str | DistanceSpec") -> tuple:
    """The canonical key of a distance name (:attr:`DistanceSpec.key`): equal for two spellings of one setting.

    Example: ``distance_key("sinkhorn_0.1") == distance_key("sinkhorn_0.10")``; raises as :func:`get`.
    """
    return get(name).key


def get(name: "str | DistanceSpec") -> DistanceSpec:
    """Look up a registered setting, or parse ``family_value`` into a new one.

    Example: ``get("sinkhorn_0.05").params["eps"] -> 0.05``.

    Raises :class:`UnknownDistanceError` (a ``KeyError``) for a name that is neither,
    :class:`DistanceSpecError` for unusable parameters (also of a hand-built spec) and
    :class:`DistanceNameTypeError` (a ``TypeError``) for a name that is not a str or spec.
    """
    if isinstance(name, DistanceSpec):
        # a hand-built spec skips make_spec: check it the same way (cheap; every call goes through here)
        fam = FAMILIES.get(name.family) if isinstance(name.family, str) else None
        if fam is None or not isinstance(name.params, dict) or set(name.params) != set(fam.defaults):
            raise DistanceSpecError(f"DistanceSpec {name.name!r}: family {name.family!r} with parameters "
                                    f"{sorted(name.params) if isinstance(name.params, dict) else name.params!r} "
                                    "is not a complete setting; build specs with make_spec()")
        _check_params(name.family, name.params)
        _check_contradiction(name.family, name.contradiction)
        return name
    if not isinstance(name, str):
        raise DistanceNameTypeError(f"distance name must be a str or DistanceSpec, got {type(name).__name__}")
    if name in REGISTRY:
        return REGISTRY[name]
    if name in EXTENSIONS:
        return EXTENSIONS[name]
    m = _NEG_RE.match(name)
    if m:  # <setting>_neg or <setting>_neg_<c>
        try:
            base = get(m.group(1))
            c = 1.0 if m.group(2) is None else float(m.group(2))
        except (UnknownDistanceError, ValueError):
            base = None
        if base is not None and not base.needs_presence:
            if c == 0:
                raise DistanceSpecError(f"{name!r}: a negation-aware setting needs a contradiction weight in "
                                        "(0, 1]; for the plain distance drop the _neg suffix")
            if base.family == "gw":
                _check_contradiction("gw", c)
            return make_spec(base.family, contradiction=c, **base.params)
    m = _RAW_RE.match(name)
    if m:  # <setting>_raw of a transport family
        try:
            base = get(m.group(1))
        except UnknownDistanceError:
            base = None
        if base is not None and base.params.get("rescale") is True and not base.negation_aware:
            return make_spec(base.family, **{**base.params, "rescale": False})
        if base is not None and not FAMILIES[base.family].rescalable:
            rescalable = [f for f, fam in FAMILIES.items() if fam.rescalable]
            raise DistanceSpecError(f"{name!r}: only {rescalable} have an unscaled (_raw) variant; "
                                    f"{base.family} " + ("compares intra-set costs only (no cross-set scale to keep)"
                                                         if base.family == "gw" else "already uses the unscaled M"))
    if name in FAMILIES and FAMILIES[name].primary is None:  # a registered family's own name
        return make_spec(name)
    for family in sorted(FAMILIES, key=len, reverse=True):  # family_<primary value>; longest name first
        prim = FAMILIES[family].primary
        m = re.fullmatch(re.escape(family) + r"_([0-9.eE+-]+)", name) if prim is not None else None
        if m:
            try:
                v = float(m.group(1))
            except ValueError:
                break
            return make_spec(family, **{prim: v})
    grammar = ", ".join(f"{f}_<{fam.primary}>" for f, fam in FAMILIES.items() if fam.primary is not None)
    raise UnknownDistanceError(f"unknown distance {name!r}; registered: {list(REGISTRY)}, ours: {list(EXTENSIONS)}; "
                               f"or use family_value ({grammar}), <setting>_raw (OT, Sinkhorn, UOT, partial), "
                               "<setting>_neg[_<c>] (not GW) or make_spec()")


def register_family(family: Family, *, replace: bool = False) -> Family:
    """Register a distance family: afterwards ``make_spec(family.name, ...)``, :func:`get` on its names, every
    distance entry point (:func:`set_distance`, the engine's ``pairwise_distances`` / ``paired_distances``),
    the rewards (a distance name is a reward name), best-of-K selection and MBR use it like a built-in one.

    Raises :class:`DistanceSpecError` for a name that is not lower-case words joined by ``_``, that ends in a
    suffix of the grammar (``raw``, ``neg``), that is taken (unless ``replace``; a built-in family is never
    removed), or for fields that do not fit together (a ``primary`` not in ``defaults``, ``rescalable``
    without a ``rescale`` default, an unknown ``presence``, a ``reference`` / ``kernel`` / ``neg_kernel`` that is
    neither a function nor a ``"module:function"`` string), or for a name that already means a setting of another
    family (``partial_adaptive``). Example: ``tests/distances/toy_family.py``.
    """
    return FAMILIES.register(family, replace=replace, check=_check_not_a_setting)


def _check_not_a_setting(family: Family) -> None:
    """A family's name must not already mean a setting of another family (``partial_adaptive`` is ``partial`` with
    ``rho="adaptive"``): one name, one distance, in :func:`get`, :func:`make_spec` and the engine alike."""
    name = family.name
    try:
        spec = get(name)
    except DistanceSpecError:  # UnknownDistanceError derives from it: the name is free
        return
    if spec.family != name:
        raise DistanceSpecError(f"family name {name!r} is already the setting {spec.name!r} of family "
                                f"{spec.family!r}; choose another name")
