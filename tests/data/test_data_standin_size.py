"""Stand-in data at any size (issue 36 item 5): studies are streamed to disk (one study's images in memory), a size
that cannot fit the disk is refused in one line before anything is written, progress goes to stderr, the output
is byte-identical to the in-memory writer it replaced, and an output path with an unknown ``~user`` is one line
(the same helper as the runner's ``--out``)."""

from __future__ import annotations

import hashlib
import io
import tarfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from sdrlib.data import standin
from sdrlib.data.standin import StandInError, write_standin
from sdrlib.data.standin.__main__ import main
from sdrlib.data.synthcxr import generate_study, render_image

pytestmark = pytest.mark.usefixtures("no_network")  # tests/conftest.py


def _tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        if p.is_file():
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


#: tree hashes of ``write_standin(layout, out, n=12, seed=0)`` as 6cc3dd8's in-memory writer wrote them (every
#: study's images drawn first, the archive built in memory). The stand-in's bytes are its contract (the same
#: arguments give byte-identical folders, which run comparisons hash); a deliberate change of the stand-in, or of
#: the pinned Pillow / pyarrow that encode its images and archive, updates them (SynthCXR 2.2.0's grammar, which
#: writes pertinent negatives on the other side and "no new" sentences, did; so did 2.3.0's images, which changed
#: only the image files and ReXGradient's packed archive parts).
BEFORE_STREAMING = {
    "mimic": "51668318159dea888b954697c302684889ebdcddef800688600417e4a329283a",
    "rexgradient": "3a3adc8327dd08e23b72b2d6adf8b8d23296d7a8680dabeb25e28c609438f3b1",
    "iuxray": "7d4187e19b4a0361c0c3558268eea0ae6e6272519db5ce2c2162083a7e3e7904",
}


@pytest.mark.parametrize("layout", list(BEFORE_STREAMING))
def test_streamed_output_is_byte_identical_to_the_in_memory_writer(tmp_path, layout):
    st = write_standin(layout, tmp_path / layout, n=12, seed=0)
    assert _tree_hash(st.root) == BEFORE_STREAMING[layout]


def test_images_drawn_on_writing_are_the_images_drawn_up_front(tmp_path):
    """Reference: the eager drawing the drafts did before (SynthCXR's image, then each extra view)."""
    drafts = standin.make_drafts("mimic", 12, 3, 48, 0.1, standin.split_sizes(12))
    for d in drafts:
        st = generate_study(3, d.split, d.index, 48)
        sp = standin.SPLITS.index(d.split)
        want = [st.image] + [render_image(st.truth, st.devices, standin.layout_rng(3, "mimic", 7, sp, d.index, j),
                                          size=48) for j in range(1, len(d.views))]
        got = d.render()
        assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want))
        assert not any(isinstance(v, np.ndarray) for v in vars(d).values())  # a draft holds no image


def test_streamed_archive_is_the_archive_built_in_memory(tmp_path):
    """Reference: the whole tar in a BytesIO, zstd-compressed in one write, cut in ten parts."""
    import pyarrow as pa

    st = write_standin("rexgradient", tmp_path / "r", n=15, seed=4, unpack=True)
    files = sorted(p for p in (st.root / "deid_png").rglob("*") if p.is_file())
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        dirs: set[str] = set()
        for p in files:
            name = p.relative_to(st.root).as_posix()
            parts = name.split("/")
            for k in range(1, len(parts)):
                if "/".join(parts[:k]) not in dirs:
                    dirs.add("/".join(parts[:k]))
                    ti = tarfile.TarInfo("/".join(parts[:k]))
                    ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 0
                    tar.addfile(ti)
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = p.stat().st_size, 0o644, 0
            tar.addfile(ti, io.BytesIO(p.read_bytes()))
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(buf.getvalue())
    packed = sink.getvalue().to_pybytes()
    k = len(packed)
    for i in range(10):
        assert (st.root / f"deid_png.part{i:02d}").read_bytes() == packed[i * k // 10:(i + 1) * k // 10]
    assert sorted(p.name for p in st.root.iterdir()) == sorted(
        ["STANDIN.json", "deid_png", "metadata"] + [f"deid_png.part{i:02d}" for i in range(10)])  # no scratch left


@pytest.mark.parametrize("layout", ["mimic", "iuxray", "rexgradient"])
def test_memory_holds_one_studys_images_not_every_study(tmp_path, monkeypatch, layout):
    """Was: every study's images drawn (and ReXGradient's PNGs, tar and archive held) before one was written.
    SynthCXR's drawing is replaced by flat images (cheap to draw and encode), so the peak is what is held."""
    import dataclasses

    from sdrlib.data.synthcxr import generate_report

    def flat_study(seed, split, index, image_size=96):
        return dataclasses.replace(generate_report(seed, split, index),
                                   image=np.full((image_size, image_size), index % 256, np.uint8))

    monkeypatch.setattr(standin, "generate_study", flat_study)
    monkeypatch.setattr(standin, "render_image", lambda truth, devices, rng, size: np.full((size, size), 7, np.uint8))
    n, size = 30, 512
    write_standin(layout, tmp_path / "warm", n=3, seed=0, image_size=size)  # imports and caches, once
    tracemalloc.start()
    try:
        write_standin(layout, tmp_path / layout, n=n, seed=0, image_size=size)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    all_images = n * 2 * size * size  # about two views a study, one byte a pixel: 15.7 MB
    assert peak < all_images / 4, (peak, all_images)


def test_a_size_that_cannot_fit_the_disk_is_refused_in_one_line_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "big"
    assert main(["mimic", str(out), "--n", str(10 ** 9)]) == 2
    captured = capsys.readouterr()
    assert not captured.out and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("standin: 1000000000 mimic studies need about ") and "free" in captured.err
    assert "--n" in captured.err and not out.exists()


def test_the_disk_check_uses_the_measured_size_per_study(tmp_path, monkeypatch):
    free = {"b": 0}
    monkeypatch.setattr(standin.shutil, "disk_usage", lambda p: type("U", (), {"free": free["b"]})())
    with pytest.raises(StandInError, match=r"30 iuxray studies need about .* KB per study at image size 64"):
        write_standin("iuxray", tmp_path / "a", n=30, seed=0)
    assert not (tmp_path / "a").exists()
    free["b"] = 10 ** 12
    assert len(write_standin("iuxray", tmp_path / "b", n=30, seed=0).studies) == 30


def test_progress_goes_to_stderr_while_the_summary_goes_to_stdout(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(standin, "PROGRESS_EVERY_S", 0.0)
    assert main(["iuxray", str(tmp_path / "p"), "--n", "20"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("iuxray stand-in: 20 studies") and captured.out.count("\n") == 1
    lines = captured.err.splitlines()
    assert "standin: drafted 20/20 studies" in captured.err and lines[-1].startswith("standin: written 20/20 studies")
    assert sum(line.startswith("standin: written ") for line in lines) == 20  # every study when every 0 s


def test_an_unknown_tilde_user_is_one_line_as_for_the_runner(tmp_path, capsys):
    from sdrlib.io import OutputPathError, output_path
    from sdrlib.runner import UsageError, _check_out

    assert main(["mimic", "~no-such-user-sdr/x"]) == 2  # was: RuntimeError traceback from Path.expanduser
    err = capsys.readouterr().err
    assert err == ("standin: out_dir ~no-such-user-sdr/x: cannot expand '~no-such-user-sdr' (no such user, or HOME "
                   "unset); give an absolute path or one relative to this folder\n")
    with pytest.raises(StandInError, match="cannot expand"):
        write_standin("iuxray", "~no-such-user-sdr/x")
    with pytest.raises(UsageError, match=r"^--out ~no-such-user-sdr/x: cannot expand '~no-such-user-sdr'"):
        _check_out("~no-such-user-sdr/x")
    with pytest.raises(OutputPathError):
        output_path("a\x00b")
    assert output_path("~/x") == Path.home() / "x"


def test_an_output_folder_that_cannot_be_created_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert main(["iuxray", str(tmp_path / "file" / "sub")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"standin: {tmp_path / 'file' / 'sub'}") and err.count("\n") == 1, err
