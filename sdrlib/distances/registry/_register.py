"""Registering a distance family from outside (:func:`register_family`): the checks of :func:`._family._add_family`
plus one that needs the setting parser, so it lives above both: a family's name must not already mean a setting
of another family.

Leaves out the family record and the built-ins (:mod:`._family`, :mod:`._builtin`).
"""

from __future__ import annotations

from sdrlib.distances.errors import DistanceSpecError
from sdrlib.distances.registry._family import Family, _add_family
from sdrlib.distances.registry._names import get


def register_family(family: Family, *, replace: bool = False) -> Family:
    """Register a distance family: afterwards ``make_spec(family.name, ...)``, :func:`get` on its names, every
    distance entry point (:func:`set_distance`, the engine's ``pairwise_distances`` / ``paired_distances``),
    the rewards (a distance name is a reward name), best-of-K selection and MBR use it like a built-in one.

    Raises :class:`DistanceSpecError` for a name that is not lower-case words joined by ``_``, that ends in a
    suffix of the grammar (``raw``, ``neg``), that is taken (unless ``replace``; a built-in family is never
    replaced), or for fields that do not fit together (a ``primary`` not in ``defaults``, ``rescalable``
    without a ``rescale`` default, an unknown ``presence``, a ``reference`` / ``kernel`` / ``neg_kernel`` that is
    neither a function nor a ``"module:function"`` string), or for a name that already means a setting of another
    family (``partial_adaptive``). Example: ``tests/distances/toy_family.py``.
    """
    return _add_family(family, replace=replace, check_name=_check_not_a_setting)


def _check_not_a_setting(name: str) -> None:
    """A family's name must not already mean a setting of another family (``partial_adaptive`` is ``partial`` with
    ``rho="adaptive"``): one name, one distance, in :func:`get`, :func:`make_spec` and the engine alike."""
    try:
        spec = get(name)
    except DistanceSpecError:  # UnknownDistanceError derives from it: the name is free
        return
    if spec.family != name:
        raise DistanceSpecError(f"family name {name!r} is already the setting {spec.name!r} of family "
                                f"{spec.family!r}; choose another name")
