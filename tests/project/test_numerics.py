"""The CPU kernel path (sdrlib.numerics): pinned where unset, a user's setting kept, recorded, compared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sdrlib import numerics
from sdrlib.numerics import KERNEL_PINS

ROOT = Path(__file__).resolve().parents[2]
AVX2 = {"machine": "x86_64", "model": "Some CPU", "vendor": "x", "flags": ["avx", "avx2", "fma", "sse4_2"],
        "logical_cpus": 2}
OLD = {**AVX2, "flags": ["avx", "sse4_2"]}
ARM = {**AVX2, "machine": "aarch64"}

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9999
flags\t\t: fpu sse4_2 avx avx2 fma avx512f

processor\t: 1
model name\t: should not be read
"""


def test_cpu_info_reads_the_first_processor_block():
    info = numerics.cpu_info(CPUINFO)
    assert info["model"] == "AMD EPYC 9999" and info["vendor"] == "AuthenticAMD"
    assert {"avx2", "fma", "avx512f"} <= set(info["flags"])
    assert numerics.cpu_info("")["flags"] == []


@pytest.mark.parametrize("info, pinned", [(AVX2, True), (OLD, False), (ARM, False)])
def test_pins_only_where_the_avx2_path_exists(info, pinned):
    env: dict[str, str] = {}
    set_now = numerics.pin_kernel_path("avx2", env, info=info)
    assert (env == KERNEL_PINS) is pinned and set_now == env
    assert numerics.kernel_path_in_force(env, info=info) == ("avx2" if pinned else "native")


def test_native_pins_nothing_and_a_users_setting_is_kept():
    env: dict[str, str] = {}
    assert numerics.pin_kernel_path("native", env, info=AVX2) == {} and env == {}
    env = {"ATEN_CPU_CAPABILITY": "default"}
    set_now = numerics.pin_kernel_path("avx2", env, info=AVX2)
    assert "ATEN_CPU_CAPABILITY" not in set_now and env["ATEN_CPU_CAPABILITY"] == "default"
    assert env["MKL_CBWR"] == "AVX2"
    assert numerics.kernel_path_in_force(env, info=AVX2) == "custom: ATEN_CPU_CAPABILITY=default"


def test_an_unknown_kernel_path_is_refused():
    with pytest.raises(ValueError, match="kernel_path must be one of avx2, native"):
        numerics.pin_kernel_path("avx512", {}, info=AVX2)


def test_the_profile_refuses_an_unknown_kernel_path():
    from sdrlib.config import ConfigError, load_profile

    assert load_profile("cpu").kernel_path == "avx2" and load_profile("paper").kernel_path == "native"
    with pytest.raises(ConfigError, match="kernel_path"):
        load_profile("smoke", {"kernel_path": "fast"})


def test_same_kernel_path_says_what_differs():
    a = {"kernel_path": "avx2", "cpu_model": "AMD EPYC", "avx512": False, "torch_cpu_capability": "AVX2"}
    assert numerics.same_kernel_path(a, {**a, "cpu_model": "Intel Xeon"}) == []  # pinned: the model alone is no reason
    # an AVX-512 CPU pinned to avx2 still trains other weights (docs/reproducibility.md, "Machines and kernel paths")
    assert numerics.same_kernel_path(a, {**a, "avx512": True}) == ["avx512 False vs True (the pins do not make these agree)"]
    diffs = numerics.same_kernel_path({**a, "kernel_path": "native"},
                                      {**a, "kernel_path": "native", "cpu_model": "Intel Xeon", "avx512": True,
                                       "torch_cpu_capability": "AVX512"})
    assert any("cpu_model" in d for d in diffs) and any("capability AVX2 vs AVX512" in d for d in diffs)
    assert numerics.same_kernel_path(a, {**a, "kernel_path": "native"}) == ["kernel path avx2 vs native"]


def test_a_process_started_with_the_pins_records_them():
    """The record of a process that loaded torch with the pins set: torch's capability and the path in force."""
    if not numerics.can_pin():
        pytest.skip("this CPU has no AVX2 path to pin")
    env: dict[str, str] = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    numerics.pin_kernel_path("avx2", env)
    code = "import json, torch; from sdrlib.numerics import machine_record; print(json.dumps(machine_record()))"
    rec = json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                    check=True).stdout)
    assert rec["kernel_path"] == "avx2" and rec["torch_cpu_capability"] == "AVX2"
    assert rec["env"]["MKL_CBWR"] == "AVX2" and rec["torch_threads"] >= 1


def test_export_prints_the_pins_for_a_shell(capsys):
    assert numerics.main(["--export"]) == 0
    lines = capsys.readouterr().out.split()
    if numerics.can_pin():
        assert [ln for ln in lines if ln != "export"] == [f"{k}={v}" for k, v in KERNEL_PINS.items()]
    else:
        assert lines == []
