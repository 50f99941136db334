"""What the embedding layer no longer trusts: model identity, the cache file, the encoder window, saved banks.

Uses the real small encoder (all-MiniLM-L6-v2, 384-d, window 256 tokens); "two different models
of the same width" are copies of it with perturbed weights.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

from sdrlib import embedding
from sdrlib.embedding import (BankNotFoundError, EmbeddingCacheWarning, EmbeddingError, EncoderTruncationWarning,
                              ReportBank, SentenceEmbedder, model_identity)
from sdrlib.embedding import bank as bank_module
from sdrlib.embedding import cache as cache_module
from sdrlib.embedding.cache import SentenceCache
from sdrlib.errors import SDRError

SENTS = ["No pneumothorax.", "Heart size is normal.", "Small left pleural effusion.", "Mild pulmonary edema."]


def _perturbed(model, seed: int, scale: float = 0.05):
    """A deep copy of ``model`` with noise added to its word embeddings (same width, other vectors)."""
    import torch

    m = copy.deepcopy(model)
    with torch.no_grad():
        emb = m[0].auto_model.get_input_embeddings().weight
        g = torch.Generator().manual_seed(seed)
        emb.add_(scale * torch.randn(emb.shape, generator=g))
    return m


def _cache_file(emb: SentenceEmbedder) -> Path:
    return emb._disk.path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _reference(model, sents):
    """Vectors straight from the encoder, unit-normalised (no cache involved)."""
    v = np.asarray(model.encode(list(sents), convert_to_numpy=True, normalize_embeddings=False), np.float64)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# --------------------------------------------------------------------------- identity
def test_identity_follows_content_not_type(small_encoder):
    file_id = model_identity(small_encoder)
    assert file_id.startswith("all-MiniLM-L6-v2@53aa51172d142c89")  # load_encoder's object: its file identity
    same_a, same_b = copy.deepcopy(small_encoder), copy.deepcopy(small_encoder)
    p1, p2 = _perturbed(small_encoder, 1), _perturbed(small_encoder, 2)
    # deepcopy carries the sdr_identity attribute over, but a copy is named by its content
    assert p1.sdr_identity == small_encoder.sdr_identity and model_identity(p1) != file_id
    assert model_identity(same_a) == model_identity(same_b)  # same weights twice: one identity
    ids = {model_identity(m) for m in (same_a, p1, p2)}
    assert len(ids) == 3 and all("@sd-" in i and i.startswith("bert-384") for i in ids)
    window = copy.deepcopy(small_encoder)
    window.max_seq_length = 128  # same weights, other window: other vectors for long sentences
    pooling = copy.deepcopy(small_encoder)
    pooling[1].pooling_mode = "cls"
    assert len({model_identity(m) for m in (same_a, window, pooling)}) == 3


def test_identity_same_weights_loaded_twice_from_disk(small_encoder):
    from sentence_transformers import SentenceTransformer

    path = embedding.resolve_encoder_path("all-MiniLM-L6-v2")
    fresh = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    fresh.encode(["a " * 400])  # encoding changes the tokenizer's truncation state: not part of the identity
    assert model_identity(fresh) == model_identity(copy.deepcopy(small_encoder))


def test_identity_of_a_stand_in_needs_an_explicit_name():
    class StandIn:
        pass

    with pytest.raises(EmbeddingError, match="no state_dict"):
        model_identity(StandIn())
    named = StandIn()
    named.sdr_identity = "fake-16"
    assert model_identity(named) == "fake-16"


class _Encoder:
    """A stand-in encoder that declares ``dim`` dimensions and returns whatever ``out(batch)`` gives."""

    def __init__(self, out, dim=8, name="liar-8"):
        self.out, self.dim, self.sdr_identity = out, dim, name

    def get_sentence_embedding_dimension(self):
        return self.dim

    def encode(self, batch, **kw):
        return self.out(batch)


def _rows(n, d=8, fill=1.0):
    return np.full((n, d), fill, dtype=np.float32)


@pytest.mark.parametrize("out, fragment", [
    (lambda b: _rows(len(b), 9), r"shape \(2, 9\), expected \(2, 8\)"),           # 9 columns, declared 8
    (lambda b: _rows(len(b) - 1), r"shape \(1, 8\), expected \(2, 8\)"),          # a row missing
    (lambda b: _rows(len(b) + 1), r"shape \(3, 8\), expected \(2, 8\)"),          # a row too many
    (lambda b: np.ones(8 * len(b)), r"shape \(16,\), expected \(2, 8\)"),         # flat
    (lambda b: [["x"] * 8] * len(b), "not a numeric array"),
    (lambda b: None, r"shape \(\), expected"),
    (lambda b: _rows(len(b), fill=np.nan), "non-finite"),
    (lambda b: _rows(len(b), fill=0.0), "zero vector"),
    (lambda b: _rows(len(b), fill=3e38), "norm overflows"),
])
def test_an_encoder_that_breaks_its_word_is_refused_before_anything_is_cached(tmp_path, out, fragment):
    """An encoder declaring 8 dimensions that returned 9 was accepted and its rows written into the
    8-d cache; a missing row failed later with a bare KeyError."""
    good = _Encoder(lambda b: np.arange(1, 1 + 8 * len(b), dtype=np.float32).reshape(len(b), 8))
    e = SentenceEmbedder(good, cache_dir=tmp_path, batch_size=2)
    e.encode(["Known one.", "Known two."])
    assert len(e._disk) == 2
    e.model = _Encoder(lambda b: good.out(b) if b[0].startswith("First") else out(b))
    with pytest.raises(EmbeddingError, match="encoder liar-8 \\(declares 8 dimensions\\), batch 1 of 2 sentences: .*"
                       + fragment):
        e.encode(["First a.", "First b.", "Second a.", "Second b."])  # batch 0 is fine, batch 1 is not
    assert len(e._disk) == 2  # nothing of the failed call was cached, not even its good batch
    assert e.encode(["Known one."]).shape == (1, 8)
    e.close()


@pytest.mark.parametrize("batch_size", [0, -1, 2.5, True, "8", None, np.float64(4.0)])
def test_unusable_batch_sizes_are_refused_when_the_embedder_is_built(batch_size):
    """0 failed at the first encode with ``range() arg 3 must not be zero``; True and 2.5 were taken as 1 and 2."""
    with pytest.raises(EmbeddingError, match=r"batch_size = .*positive integer"):
        SentenceEmbedder(_Encoder(lambda b: _rows(len(b))), cache_dir=None, batch_size=batch_size)
    assert SentenceEmbedder(_Encoder(lambda b: _rows(len(b))), batch_size=np.int64(3)).batch_size == 3


@pytest.mark.parametrize("dim", [None, 0, -8, 8.0, True])
def test_an_encoder_without_a_usable_declared_dimension_is_refused(dim):
    with pytest.raises(EmbeddingError, match=r"encoder liar-8 declares .* dimensions"):
        SentenceEmbedder(_Encoder(lambda b: _rows(len(b)), dim=dim), cache_dir=None)


def test_two_models_of_one_width_never_share_cache_rows(small_encoder, tmp_path):
    p1, p2 = _perturbed(small_encoder, 1), _perturbed(small_encoder, 2)
    a = SentenceEmbedder(p1, cache_dir=tmp_path)
    A = a.encode(SENTS)
    b = SentenceEmbedder(p2, cache_dir=tmp_path)
    B = b.encode(SENTS)
    assert b.stats["hits"] == 0 and b.stats["encoded"] == len(SENTS)  # nothing served from a's rows
    assert _cache_file(a) != _cache_file(b)
    assert np.abs(A - B).max() > 1e-3  # the perturbation matters, so sharing would have been wrong
    np.testing.assert_allclose(B, _reference(p2, SENTS), atol=1e-5)
    # the same weights again (another copy): served from the cache, no forward pass
    again = SentenceEmbedder(copy.deepcopy(p1), cache_dir=tmp_path)
    np.testing.assert_array_equal(again.encode(SENTS), A)
    assert again.stats["forward_calls"] == 0
    for e in (a, b, again):
        e.close()


# --------------------------------------------------------------------------- corrupt cache
def _garbage(path: Path) -> bytes:
    data = b"this is not an sqlite database\n" * 200
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


@pytest.mark.parametrize("damage", ["garbage", "truncated", "zeroed_pages"])
def test_corrupt_cache_is_moved_aside_and_rebuilt(small_encoder, tmp_path, damage):
    path = tmp_path / "embeddings" / f"{SentenceEmbedder(small_encoder).encoder_id}.sqlite"  # the padded passes' cache
    if damage == "garbage":
        original = _garbage(path)
    else:  # a real cache with many rows, then damaged past its first page
        c = SentenceCache(path, 384)
        rng = np.random.default_rng(0)
        vecs = rng.standard_normal((600, 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        c.put_many([(f"filler sentence {i}.", v) for i, v in enumerate(vecs)])
        c.put_many([(s, vecs[0]) for s in SENTS])  # the rows the test will ask for (stored late: deep pages)
        c.close()
        data = bytearray(path.read_bytes())
        if damage == "truncated":
            data = data[:len(data) // 3]
        else:
            data[4096:] = bytes(len(data) - 4096)
        path.write_bytes(bytes(data))
        original = bytes(data)
    with pytest.warns(EmbeddingCacheWarning, match="corrupt") as rec:
        e = SentenceEmbedder(small_encoder, cache_dir=tmp_path)
        E = e.encode(SENTS)
    np.testing.assert_allclose(E, _reference(small_encoder, SENTS), atol=1e-5)  # never the stored junk
    aside = [p for p in path.parent.iterdir() if ".corrupt-" in p.name and not p.name.endswith("-wal")]
    assert len(aside) == 1 and aside[0].read_bytes() == original  # kept for inspection, untouched
    msg = str(rec[0].message)
    assert str(path) in msg and str(aside[0]) in msg
    assert len(e._disk) == len(SENTS)  # the new cache holds the recomputed rows
    e.close()
    warm = SentenceEmbedder(small_encoder, cache_dir=tmp_path)
    np.testing.assert_array_equal(warm.encode(SENTS), E)
    assert warm.stats["forward_calls"] == 0
    warm.close()


def test_corrupt_read_only_cache_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "shared" / "enc.sqlite"
    _garbage(path)
    with pytest.raises(EmbeddingError, match="read-only") as info:
        SentenceCache(path, 384, readonly=True)
    assert str(path) in str(info.value) and isinstance(info.value, SDRError)
    assert path.read_bytes().startswith(b"this is not")  # left alone


def test_other_sqlite_failures_name_the_file(tmp_path):
    path = tmp_path / "embeddings" / "enc.sqlite"
    path.mkdir(parents=True)  # a folder where the cache file should be: SQLite cannot open it
    with pytest.raises(EmbeddingError, match="delete") as info:
        SentenceCache(path, 384)
    assert str(path) in str(info.value)
    other = tmp_path / "other.sqlite"
    SentenceCache(other, 8).close()
    with pytest.raises(EmbeddingError, match="8-d vectors") as info:
        SentenceCache(other, 384)
    assert str(other) in str(info.value)


# --------------------------------------------------------------------------- read-only cache
def _warm_cache(model, cache_dir) -> Path:
    e = SentenceEmbedder(model, cache_dir=cache_dir)
    e.encode(SENTS)
    path = _cache_file(e)
    e.close()
    return path


def test_read_only_cache_serves_hits_and_never_writes(small_encoder, tmp_path):
    path = _warm_cache(small_encoder, tmp_path)
    before = _sha(path)
    with pytest.warns(EmbeddingCacheWarning, match="read-only") as rec:
        e = SentenceEmbedder(small_encoder, cache_dir=tmp_path, cache_readonly=True)
    assert len(rec) == 1 and str(path) in str(rec[0].message) and e.cache_readonly
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddingCacheWarning)  # said once, at open: not again per call
        E = e.encode(SENTS)
        assert e.stats["forward_calls"] == 0 and e.stats["hits"] == len(SENTS)
        new = e.encode(["Right lower lobe opacity."])
        assert e.stats["encoded"] == 1
        e.encode(["Right lower lobe opacity."])  # kept in memory for the rest of the run
        assert e.stats["encoded"] == 1
    np.testing.assert_allclose(new, _reference(small_encoder, ["Right lower lobe opacity."]), atol=1e-5)
    np.testing.assert_allclose(E, _reference(small_encoder, SENTS), atol=1e-5)
    # the connection itself is read-only (SQLite mode=ro), so a write could not happen by accident
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        e._disk._con.execute("INSERT INTO vec VALUES ('x', x'00')")
    e.close()
    assert _sha(path) == before
    wal = path.with_name(path.name + "-wal")  # a mode=ro reader may create an empty WAL, never write one
    assert not wal.exists() or wal.stat().st_size == 0


def test_unwritable_cache_is_detected(small_encoder, tmp_path, monkeypatch):
    path = _warm_cache(small_encoder, tmp_path)
    real_access = os.access
    monkeypatch.setattr(cache_module.os, "access",  # as seen by a user without write permission
                        lambda p, mode: False if mode == os.W_OK and str(tmp_path) in str(p) else real_access(p, mode))
    with pytest.warns(EmbeddingCacheWarning, match="not writable"):
        e = SentenceEmbedder(small_encoder, cache_dir=tmp_path)
    assert e.cache_readonly
    e.encode(SENTS + ["Right lower lobe opacity."])
    assert e.stats["hits"] == len(SENTS) and e.stats["encoded"] == 1
    e.close()
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT COUNT(*) FROM vec").fetchone()[0] == len(SENTS)
    # nothing there yet and nowhere to create it: memory only, said once
    with pytest.warns(EmbeddingCacheWarning, match="cannot be created"):
        e = SentenceEmbedder(small_encoder, cache_dir=tmp_path / "elsewhere")
    assert e.encode(SENTS).shape == (len(SENTS), 384) and not (tmp_path / "elsewhere").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run a process as another user")
def test_read_only_cache_for_a_real_unprivileged_user(small_encoder):
    """Tests run as root, whom permissions do not stop: run the reader as `nobody` instead."""
    shared = Path(tempfile.mkdtemp(prefix="sdr-shared-cache-"))
    home = Path(tempfile.mkdtemp(prefix="sdr-nobody-home-"))
    try:
        path = _warm_cache(small_encoder, shared)
        for p in (shared, shared / "embeddings"):
            p.chmod(0o755)
        path.chmod(0o644)
        os.chown(home, 65534, 65534)
        before = _sha(path)
        script = (
            "import json, warnings\n"
            "from sdrlib.embedding import SentenceEmbedder, load_encoder\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            f"    e = SentenceEmbedder(load_encoder('all-MiniLM-L6-v2'), cache_dir={str(shared)!r})\n"
            f"    e.encode({SENTS!r} + ['Right lower lobe opacity.'])\n"
            "print(json.dumps({'ro': e.cache_readonly, 'stats': e.stats,\n"
            "                  'warnings': [str(x.message) for x in w if 'cache' in str(x.message)]}))\n")
        env = {**os.environ, "HOME": str(home), "OMP_NUM_THREADS": "1"}
        out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
                              "-c", script], capture_output=True, text=True, env=env, cwd=str(home), timeout=240)
        assert out.returncode == 0, out.stderr[-3000:]
        res = json.loads(out.stdout.strip().splitlines()[-1])
        assert res["ro"] and res["stats"]["hits"] == len(SENTS) and res["stats"]["encoded"] == 1
        assert len(res["warnings"]) == 1 and "read-only" in res["warnings"][0]
        assert _sha(path) == before
    finally:
        shutil.rmtree(shared, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


# --------------------------------------------------------------------------- stored rows
def _tamper(path: Path, rows: dict[str, object]) -> None:
    con = sqlite3.connect(path)
    with con:
        for text, blob in rows.items():
            con.execute("UPDATE vec SET v = ? WHERE text = ?", (blob, text))
    con.close()


def _bad_rows(path: Path) -> dict[str, object]:
    good = (np.ones(384) / np.sqrt(384)).astype(np.float32)
    assert len(good.tobytes()) == 4 * 384  # only SENTS[0] has the wrong length
    nan = good.copy()
    nan[3] = np.nan
    return {SENTS[0]: good[:100].tobytes(),  # wrong length
            SENTS[1]: nan.tobytes(),  # not finite
            SENTS[2]: (2 * good).tobytes()}  # not unit norm (SENTS[3] stays valid)


def test_invalid_cached_rows_are_recomputed_and_overwritten(small_encoder, tmp_path):
    path = _warm_cache(small_encoder, tmp_path)
    _tamper(path, _bad_rows(path))
    e = SentenceEmbedder(small_encoder, cache_dir=tmp_path)
    E = e.encode(SENTS)
    np.testing.assert_allclose(E, _reference(small_encoder, SENTS), atol=1e-5)
    assert e.stats["invalid_cached"] == 3 and e.stats["misses"] == 3 and e.stats["hits"] == 1
    e.close()
    again = SentenceEmbedder(small_encoder, cache_dir=tmp_path)
    np.testing.assert_array_equal(again.encode(SENTS), E)  # the file was repaired
    assert again.stats["invalid_cached"] == 0 and again.stats["forward_calls"] == 0
    again.close()


def test_invalid_rows_in_a_read_only_cache_are_recomputed_not_written(small_encoder, tmp_path):
    path = _warm_cache(small_encoder, tmp_path)
    _tamper(path, _bad_rows(path))
    before = _sha(path)
    with pytest.warns(EmbeddingCacheWarning):
        e = SentenceEmbedder(small_encoder, cache_dir=tmp_path, cache_readonly=True)
    E = e.encode(SENTS)
    assert e.stats["invalid_cached"] == 3
    np.testing.assert_allclose(E, _reference(small_encoder, SENTS), atol=1e-5)
    e.close()
    assert _sha(path) == before


def test_cache_row_validation_bounds(tmp_path):
    c = SentenceCache(tmp_path / "c.sqlite", 4)
    unit = np.array([1, 0, 0, 0], np.float32)
    c.put_many([("ok", unit), ("near", unit * (1 + 5e-4)), ("far", unit * (1 + 5e-3)), ("zero", 0 * unit),
                ("inf", np.array([np.inf, 0, 0, 0], np.float32)), ("long", np.ones(5, np.float32) / np.sqrt(5))])
    with c._con:
        c._con.execute("UPDATE vec SET v = 'text, not bytes' WHERE text = 'near'")
        c._con.execute("INSERT INTO vec VALUES ('alsonear', ?)", ((unit * (1 - 9e-4)).tobytes(),))
    found, bad = c.get_many(["ok", "near", "far", "zero", "inf", "long", "alsonear", "absent"])
    assert sorted(found) == ["alsonear", "ok"] and sorted(bad) == ["far", "inf", "long", "near", "zero"]
    c.close()


# --------------------------------------------------------------------------- encoder window
def test_sentences_over_the_window_are_counted_and_warned_once(small_encoder, tmp_path):
    tok = small_encoder.tokenizer
    limit = small_encoder.max_seq_length
    n_tok = lambda s: len(tok([s], truncation=False, verbose=False)["input_ids"][0])  # noqa: E731
    at_limit = ("a " * (limit - 2)).strip()  # [CLS] + tokens + [SEP] == limit: fits
    over_one = at_limit + " a"
    longest = " ".join(["pneumothorax"] * 120) + "."
    assert n_tok(at_limit) == limit and n_tok(over_one) == limit + 1 and n_tok(longest) > 2 * limit
    e = SentenceEmbedder(small_encoder, cache_dir=tmp_path)
    with pytest.warns(EncoderTruncationWarning) as rec:
        E = e.encode(["No pneumothorax.", at_limit, over_one, longest, longest])
    assert len(rec) == 1  # once per call, not once per sentence
    msg = str(rec[0].message)
    assert "2 of 4" in msg and f"{n_tok(longest)} tokens" in msg and str(limit) in msg
    assert e.last_truncated == 2 and e.stats["truncated"] == 2 and e.stats["longest_tokens"] == n_tok(longest)
    # the vectors are the encoder's own (truncated) ones, unchanged
    np.testing.assert_allclose(E, _reference(small_encoder, ["No pneumothorax.", at_limit, over_one, longest,
                                                             longest]), atol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EncoderTruncationWarning)
        e.encode(["No pneumothorax.", at_limit])
    assert e.last_truncated == 0 and e.stats["truncated"] == 2
    e.close()
    # served from the cache, still counted: the count describes the call, not the cache state
    warm = SentenceEmbedder(small_encoder, cache_dir=tmp_path)
    with pytest.warns(EncoderTruncationWarning, match="1 of 1"):
        warm.encode([over_one])
    assert warm.stats["forward_calls"] == 0 and warm.last_truncated == 1 and warm.stats["truncated"] == 1
    warm.reset_stats()
    assert warm.stats["truncated"] == 0
    warm.close()


def test_truncation_count_follows_the_window(small_encoder):
    short = copy.deepcopy(small_encoder)
    short.max_seq_length = 8
    e = SentenceEmbedder(short, cache_dir=None)
    assert e.max_tokens == 8
    with pytest.warns(EncoderTruncationWarning, match="window of 8 tokens"):
        e.encode(["Heart normal.", "There is a small left pleural effusion with atelectasis."])
    assert e.last_truncated == 1 and e.stats["longest_tokens"] > 8


# --------------------------------------------------------------------------- report bank
REPORTS = [("Heart size is normal. No pneumothorax.", "No acute process."),
           ("Small left pleural effusion.", "Effusion."),
           ("Right lower lobe opacity. No pneumothorax.", "Pneumonia.")]


@pytest.fixture()
def banks(small_encoder):
    e = SentenceEmbedder(small_encoder, cache_dir=None)
    f, i = zip(*REPORTS)
    old = ReportBank.build(e, list(f[:2]), list(i[:2]), ids=["a", "b"])
    new = ReportBank.build(e, list(f), list(i), ids=["a", "b", "c"])
    assert old.corpus_hash != new.corpus_hash
    return old, new


def test_bank_save_interrupted_after_the_arrays(banks, tmp_path, monkeypatch):
    old, new = banks
    path = old.save(tmp_path / "bank")

    def crash(*a, **k):
        raise KeyboardInterrupt("interrupted between the two files")

    monkeypatch.setattr(bank_module, "atomic_write_json", crash)
    with pytest.raises(KeyboardInterrupt):
        new.save(tmp_path / "bank")
    assert json.loads(path.with_suffix(".json").read_text())["corpus_hash"] == old.corpus_hash  # stale copy
    back = ReportBank.load(path)  # the npz carries its own record: the new arrays with the new hash
    assert back.corpus_hash == new.corpus_hash and back.ids == new.ids
    np.testing.assert_array_equal(back.matrix("findings"), new.matrix("findings"))


def test_bank_save_interrupted_inside_the_arrays(banks, tmp_path, monkeypatch):
    old, new = banks
    path = old.save(tmp_path / "bank")

    def half_write(p, **arrays):
        Path(p).write_bytes(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt

    monkeypatch.setattr(bank_module.np, "savez", half_write)
    with pytest.raises(KeyboardInterrupt):
        new.save(tmp_path / "bank")
    monkeypatch.undo()
    back = ReportBank.load(path)  # the old bank, whole
    assert back.corpus_hash == old.corpus_hash and back.ids == old.ids
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.json", "bank.npz"]  # no temporary left behind


def test_bank_damaged_or_legacy_files_are_refused_naming_the_file(banks, tmp_path):
    old, _ = banks
    path = old.save(tmp_path / "bank")
    data = path.read_bytes()
    cases = {
        "truncated": data[:len(data) // 2],
        "flipped": data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF]) + data[len(data) // 2 + 1:],
        "empty": b"",
    }
    for name, blob in cases.items():
        p = tmp_path / f"{name}.npz"
        p.write_bytes(blob)
        with pytest.raises(EmbeddingError, match="rebuild") as info:
            ReportBank.load(p)
        assert str(p) in str(info.value), name
    # the older two-file format: arrays without their record
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files if k != "record"}
    legacy = tmp_path / "legacy.npz"
    np.savez(legacy, **arrays)
    with pytest.raises(EmbeddingError, match="no embedded record") as info:
        ReportBank.load(legacy)
    assert str(legacy) in str(info.value)
    # arrays that disagree with the record or with each other
    bad_offsets = dict(np.load(path, allow_pickle=False))
    bad_offsets["findings_offsets"] = bad_offsets["findings_offsets"] + 1
    short_ids = dict(np.load(path, allow_pickle=False))
    short_ids["ids"] = short_ids["ids"][:1]
    bad_record = dict(np.load(path, allow_pickle=False))
    bad_record["record"] = np.array("{not json")
    for name, arrs, pattern in (("offsets", bad_offsets, "offsets"), ("ids", short_ids, "ids shape"),
                                ("record", bad_record, "unusable record")):
        p = tmp_path / f"bad_{name}.npz"
        np.savez(p, **arrs)
        with pytest.raises(EmbeddingError, match=pattern) as info:
            ReportBank.load(p)
        assert str(p) in str(info.value)


def test_missing_bank_is_a_named_sdr_error(tmp_path):
    with pytest.raises(BankNotFoundError, match="does not exist") as info:
        ReportBank.load(tmp_path / "nope")
    assert isinstance(info.value, SDRError) and isinstance(info.value, FileNotFoundError)
    assert str(tmp_path / "nope.npz") in str(info.value)
