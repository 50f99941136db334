"""The runner tests check runs and their summaries: the machine probe runs for real once per process
(``machine_probed_once``, tests/conftest.py)."""

import pytest


@pytest.fixture(autouse=True)
def _machine_probed_once(machine_probed_once):
    return machine_probed_once
