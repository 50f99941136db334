"""End-to-end tests of sdrlib.apigen (candidates from an OpenAI-compatible API).

Every test drives the real ``openai`` client against the real HTTP server of
:mod:`sdrlib.serve` on 127.0.0.1 (in a thread), never a mocked client. The test
backend is deterministic (tests/chat_helpers.py): an answer names the study (a hash of the image
it received), the request seed and the choice index, so results can be compared across runs.
The server's own behaviour is tested in tests/serve/.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from sdrlib import apigen
from sdrlib.apigen import (
    APIGenError, APIKeyError, APIRequestError, APIStats, CacheWarning, FAILED_PLACEHOLDER, choose_exemplars,
    generate_api_candidates, load_cache, parse_api_answer,
)
from sdrlib.errors import SDRError
from sdrlib.reports import build_template, parse_template
from training_helpers import Rec  # the record shape sdrlib.data loaders return
from sdrlib.serve import ChatServer, Faults
from chat_helpers import det_backend, png, run, chat_records

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def recs(tmp_path):
    return chat_records(tmp_path)


@pytest.fixture()
def pool(tmp_path):
    return [Rec(f"t{i}", [png(tmp_path / f"train_{i}.png", 100 + i)], f"Finding number {i} is described.",
                f"Impression {i}.", None, "train") for i in range(10)]


def _tag_of(rec) -> str:
    return hashlib.sha256(apigen.image_data_url(rec.image_paths[0]).encode()).hexdigest()[:8]


# --------------------------------------------------------------------------- (a) shape and parsing
@pytest.mark.parametrize("use_n,calls", [(None, 4), (False, 12)])
def test_n_candidates_per_study_in_study_order_and_parsed(recs, tmp_path, use_n, calls):
    with ChatServer(det_backend) as srv:
        out, st = run(recs, srv, tmp_path / "c.jsonl", concurrency=3, use_n=use_n)
        assert srv.requests == calls  # n=K: one request per study; else one per sample
    assert len(out) == 4 and all(len(row) == 3 for row in out)
    for rec, row in zip(recs, out):
        assert all(f"Study {_tag_of(rec)} " in t for t in row)  # each study got its own image, in order
        assert len(set(row)) == 3
        assert all(parse_api_answer(t).form == "template" for t in row)
    assert (st.samples, st.requested, st.generated, st.cached, st.failed, st.malformed) == (12, 12, 12, 0, 0, 0)
    assert st is apigen.last_stats()


# --------------------------------------------------------------------------- (b) cache
def test_second_run_is_served_from_the_cache_with_zero_requests(recs, tmp_path):
    cache = tmp_path / "c.jsonl"
    with ChatServer(det_backend) as srv:
        first, _ = run(recs, srv, cache)
        srv.reset_counts()
        second, st = run(recs, srv, cache)
        assert srv.requests == 0
        assert second == first and (st.cached, st.requested) == (12, 0)
        # other settings are other keys: never served a sample drawn under different ones
        for change in ({"temperature": 0.5}, {"max_tokens": 64}, {"seed": 1}, {"prompt": "p2"}):
            srv.reset_counts()
            extra = {"exemplars": _pool_like()} if "prompt" in change else {}
            _, st2 = run(recs[:1], srv, cache, use_n=False, **change, **extra)
            assert srv.requests == 3 and st2.cached == 0, change
        srv.reset_counts()
        _, st3 = run(recs[:1], srv, cache, n_candidates=5)  # more samples: only the two new ones are asked
        assert srv.requests == 2 and (st3.cached, st3.requested) == (3, 2)


def _pool_like():
    return [Rec(f"p{i}", [], f"Lung field {i} clear.", f"Fine {i}.", None, "train") for i in range(6)]


# --------------------------------------------------------------------------- (c) interruption
_CHILD = textwrap.dedent("""
    import json, sys
    from dataclasses import dataclass
    from sdrlib.apigen import generate_api_candidates

    @dataclass
    class Rec:
        study_id: str
        image_paths: list
        findings: str
        impression: str
        labels: object
        split: str

    args = json.loads(sys.argv[1])
    recs = [Rec(**r) for r in args["recs"]]
    generate_api_candidates(recs, model="test-model", base_url=args["url"], n_candidates=3, cache_path=args["cache"],
                            concurrency=1, use_n=False, backoff=0.001, max_retries=0)
    print("FINISHED")
""")


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_killed_run_resumes_asking_only_the_missing_samples(recs, tmp_path):
    m = 5
    cache, ref_cache = tmp_path / "c.jsonl", tmp_path / "ref.jsonl"
    release = threading.Event()
    served = [0]

    def blocking(messages, n, temperature, max_tokens, seed):
        if served[0] >= m:  # the (m+1)-th request hangs until the client is killed
            release.wait(60)
        served[0] += n
        return det_backend(messages, n, temperature, max_tokens, seed)

    with ChatServer(blocking) as srv:
        payload = json.dumps({"url": srv.url, "cache": str(cache), "recs": [r.__dict__ for r in recs]})
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("OPENAI_API_KEY", None)
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, payload], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while _lines(cache) < m and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proc.poll() is None, proc.communicate()
            proc.kill()  # SIGKILL: no cleanup, as a crash or a pulled plug
            proc.wait(30)
        finally:
            release.set()
        assert _lines(cache) == m  # every sample received before the kill is on disk
        srv.reset_counts()
        resumed, st = run(recs, srv, cache, concurrency=1, use_n=False)
        assert srv.requests == 4 * 3 - m == 7  # only the missing samples are asked
        assert (st.cached, st.requested, st.generated) == (m, 7, 7)
        srv.reset_counts()
        reference, _ = run(recs, srv, ref_cache, concurrency=1, use_n=False)
        assert srv.requests == 12
    assert resumed == reference  # identical to an uninterrupted run


def test_run_cut_by_a_vanishing_server_resumes_only_failed_samples(recs, tmp_path):
    cache = tmp_path / "c.jsonl"
    with ChatServer(det_backend, faults=Faults(fail_first=0)) as srv:
        url = srv.url
        first, st1 = run(recs[:2], srv, cache, use_n=False, concurrency=1)
    # server gone: the same URL refuses connections; samples fail, nothing is lost
    stats = APIStats()
    out = generate_api_candidates(recs, model="test-model", base_url=url, cache_path=cache, n_candidates=3, stats=stats,
                                  backoff=0.001, max_retries=1, use_n=False, concurrency=2)
    assert out[:2] == first and out[2:] == [[FAILED_PLACEHOLDER] * 3] * 2
    assert (stats.cached, stats.failed, stats.errors["connection"]) == (6, 6, 6)
    with ChatServer(det_backend) as srv2:
        again, st = run(recs, srv2, cache, use_n=False)
        assert srv2.requests == 6 and again[:2] == first and FAILED_PLACEHOLDER not in sum(again, [])


# --------------------------------------------------------------------------- (d) torn lines
def test_torn_last_line_is_ignored_with_a_warning_and_the_next_write_starts_a_fresh_line(recs, tmp_path):
    cache = tmp_path / "c.jsonl"
    with ChatServer(det_backend) as srv:
        first, _ = run(recs, srv, cache, use_n=False)
        lines = cache.read_bytes().splitlines(keepends=True)
        # the last real record cut in half, as an interrupted write leaves it
        cache.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
        srv.reset_counts()
        with pytest.warns(CacheWarning, match="torn last line"):
            again, st = run(recs, srv, cache, use_n=False)
        assert srv.requests == 1 and st.corrupt_lines == 1 and again == first
        # the appended record did not glue onto the fragment: exactly one bad line, then a clean run
        with pytest.warns(CacheWarning):
            found, corrupt = load_cache(cache)
        assert corrupt == 1 and len(found) == 12
        for junk in (b"not json at all\n", b"[1, 2]\n", b'{"v": 1}\n', b"\xff\xfe\n"):
            with open(cache, "ab") as fh:
                fh.write(junk)
        srv.reset_counts()
        with pytest.warns(CacheWarning):
            third, st3 = run(recs, srv, cache, use_n=False)
        assert srv.requests == 0 and third == first and st3.corrupt_lines == 5


# --------------------------------------------------------------------------- (e) retries
@pytest.mark.parametrize("faults,kinds", [
    (Faults(fail_first=2, rate_limit_every=3, retry_after=0.05), {"500", "429"}),
    (Faults(fail_first=1, fail_status=503, drop_first=1, malformed_first=1), {"503", "connection", "bad_response"}),
])
def test_transient_errors_are_retried_and_counted(recs, tmp_path, faults, kinds):
    with ChatServer(det_backend, faults=faults) as srv:
        out, st = run(recs, srv, tmp_path / "c.jsonl", use_n=False, concurrency=1, max_retries=4)
        bad = sum(srv.injected.values())
        assert srv.requests == 12 + bad and st.api_calls == srv.requests
    with ChatServer(det_backend) as clean:
        ref, _ = run(recs, clean, tmp_path / "ref.jsonl", use_n=False, concurrency=1)
    assert out == ref and st.failed == 0 and st.generated == 12
    assert st.retried == bad and set(k for k in st.errors if not k.startswith("failed")) == kinds
    if "429" in srv.injected:  # Retry-After respected: never retried earlier than asked
        assert srv.injected["429"] >= 2
        assert sum(w >= 0.05 for w in st.retry_waits) >= srv.injected["429"]


# --------------------------------------------------------------------------- (f) permanent failure
def test_a_server_that_always_fails_gives_placeholders_and_counts_then_the_next_run_retries(recs, tmp_path):
    cache = tmp_path / "c.jsonl"
    with ChatServer(det_backend, faults=Faults(fail_first=10**9)) as srv:
        out, st = run(recs, srv, cache, max_retries=2)
        assert srv.requests == 4 * 3  # one n=3 request per study, tried 1 + 2 times
    assert out == [[FAILED_PLACEHOLDER] * 3] * 4 and parse_api_answer(FAILED_PLACEHOLDER).malformed
    assert (st.failed, st.generated, st.retried, st.malformed) == (12, 0, 8, 0)
    assert st.errors["failed_500"] == 4
    assert all(json.loads(x)["status"] == "failed" for x in cache.read_text().splitlines())
    with ChatServer(det_backend) as srv2:
        again, st2 = run(recs, srv2, cache)
        assert srv2.requests == 4 and st2.cached == 0 and st2.generated == 12


def test_a_refused_key_or_model_stops_the_run_with_a_named_error(recs, tmp_path, monkeypatch):
    monkeypatch.setenv("SDR_TEST_KEY", "sk-wrong-key-123456")
    with ChatServer(det_backend, faults=Faults(api_key="sk-right")) as srv:
        with pytest.raises(APIRequestError, match="check the key") as err:
            run(recs, srv, tmp_path / "c.jsonl", api_key_env="SDR_TEST_KEY", concurrency=1)
        assert isinstance(err.value, SDRError) and "sk-wrong-key-123456" not in str(err.value)
        assert srv.requests == 1  # no retries on 401, no further study asked
        srv.reset_counts()
        with pytest.raises(APIRequestError):  # in flight at once: at most one request per thread
            run(recs, srv, tmp_path / "c.jsonl", api_key_env="SDR_TEST_KEY", concurrency=2, use_n=False)
        assert srv.requests <= 2
    assert not (tmp_path / "c.jsonl").read_text().strip()  # nothing recorded as failed


# --------------------------------------------------------------------------- (g) malformed
_ANSWERS = [
    ("<think> Lungs clear. </think> <answer> Normal. </answer>", "template", "Lungs clear.", "Normal."),
    ("Here it is:\n<think>Lungs clear.</think>\n<answer>Normal.</answer>\nHope it helps", "template_loose",
     "Lungs clear.", "Normal."),
    ("FINDINGS: Lungs clear.\nIMPRESSION: Normal.", "headers", "Lungs clear.", "Normal."),
    ("Findings: Lungs clear. Impression: Normal.", "headers", "Lungs clear.", "Normal."),
    ("**Findings:** Lungs clear.\n**Impression:** Normal.", "markdown", "Lungs clear.", "Normal."),
    ("**Findings**\n- Lungs clear.\n- No effusion.\n\n**Impression**: Normal.", "markdown",
     "Lungs clear. No effusion.", "Normal."),
    ("### Findings\nLungs clear.\n### Impression\nNormal.", "markdown", "Lungs clear.", "Normal."),
    ("## FINDINGS:\nLungs clear.\n\n## IMPRESSION:\nNormal.", "markdown", "Lungs clear.", "Normal."),
    ("```\nFINDINGS: Lungs clear.\nIMPRESSION: Normal.\n```", "headers", "Lungs clear.", "Normal."),
    ("```markdown\n<think> Lungs clear. </think> <answer> Normal. </answer>\n```", "template",
     "Lungs clear.", "Normal."),
    ("IMPRESSION: Normal.", "headers", "", "Normal."),
    ("The lungs are clear and the heart is normal.", "raw", "The lungs are clear and the heart is normal.", ""),
    ("I cannot interpret medical images.", "raw", "I cannot interpret medical images.", ""),
    ("<think></think> <answer> </answer>", "raw", "<think></think> <answer> </answer>", ""),
    ("", "empty", "", ""),
    ("  \n\u200b ", "empty", "", ""),
]


@pytest.mark.parametrize("text,form,findings,impression", _ANSWERS)
def test_parse_api_answer_layouts(text, form, findings, impression):
    got = parse_api_answer(text)
    assert (got.form, got.findings, got.impression) == (form, findings, impression)
    assert got.malformed == (form in ("raw", "empty"))
    assert got["findings"] == findings  # still a Sections


def test_parse_api_answer_refuses_non_text():
    with pytest.raises(SDRError):
        parse_api_answer(None)


def test_malformed_answers_are_kept_verbatim_and_counted(recs, tmp_path):
    texts = [a[0] for a in _ANSWERS if a[0]]  # every layout but the empty one
    it = iter(range(10**6))

    def varied(messages, n, temperature, max_tokens, seed):
        return [texts[next(it) % len(texts)] for _ in range(n)]

    with ChatServer(varied) as srv:
        out, st = run(recs, srv, tmp_path / "c.jsonl", n_candidates=len(texts), use_n=False, concurrency=1)
    flat = sum(out, [])
    assert sorted(flat) == sorted(texts * 4)  # nothing dropped, nothing rewritten
    assert st.malformed == 4 * sum(parse_api_answer(t).malformed for t in texts) == 4 * 4
    with ChatServer(det_backend, faults=Faults(strip_template=True)) as srv:
        out2, st2 = run(recs, srv, tmp_path / "c2.jsonl")
    assert st2.malformed == 12 and all("<think>" not in t and t for t in sum(out2, []))


# --------------------------------------------------------------------------- (h) prompt p2
def test_p2_prompt_holds_five_training_exemplars_chosen_by_seed(recs, pool, tmp_path):
    seen: list[str] = []

    def capture(messages, n, temperature, max_tokens, seed):
        seen.append(messages[0]["content"][1]["text"])
        return det_backend(messages, n, temperature, max_tokens, seed)

    templates = {build_template(r.findings, r.impression) for r in pool}
    prompts = {}
    with ChatServer(capture) as srv:
        for run_no, s in enumerate((0, 0, 1, 2, 3)):
            seen.clear()
            run(recs[:1], srv, tmp_path / f"c{run_no}.jsonl", prompt="p2", exemplars=pool, seed=s, n_candidates=1)
            (text,) = seen
            lines = text.splitlines()
            shots = [lines[i + 1] for i, line in enumerate(lines) if re.fullmatch(r"Example \d:", line)]
            assert len(shots) == 5 and len(set(shots)) == 5 and set(shots) <= templates
            assert all(parse_template(t) for t in shots)
            assert prompts.setdefault(s, text) == text  # same seed, same prompt
        seen.clear()
        run(recs[:1], srv, tmp_path / "p1.jsonl", prompt="p1", exemplars=pool, n_candidates=1)
        assert "Example" not in seen[0] and "<think>" in seen[0]
    assert len(set(prompts.values())) > 1  # the seed changes the choice
    assert choose_exemplars(pool, seed=4) == choose_exemplars(list(pool), seed=4)
    assert choose_exemplars(pool, seed=4) != choose_exemplars(pool, seed=5)


@pytest.mark.parametrize("bad_pool,match", [
    (lambda p: p[:4], "needs 5 exemplars"),
    (lambda p: p[:4] + [Rec("x", [], "", "Imp.", None, "train")] * 3, "needs 5 exemplars"),
    (lambda p: p[:6] + [Rec("x", [], "F.", "I.", None, "test")], "training split"),
    (lambda p: "not a pool", "sequence"),
    (lambda p: None, "needs 5 exemplars"),
])
def test_p2_refuses_unusable_exemplar_pools(recs, pool, tmp_path, bad_pool, match):
    with pytest.raises(APIGenError, match=match):
        generate_api_candidates(recs, model="m", base_url="http://127.0.0.1:9/v1", prompt="p2",
                                exemplars=bad_pool(pool), cache_path=tmp_path / "c.jsonl")
    assert not (tmp_path / "c.jsonl").exists()


# --------------------------------------------------------------------------- (i) key hygiene
def test_the_key_is_sent_but_never_written_or_logged(recs, tmp_path, monkeypatch, caplog):
    secret = "sk-test-SECRET-0123456789abcdef"
    monkeypatch.setenv("MY_API_KEY", secret)
    caplog.set_level(logging.DEBUG)
    with ChatServer(det_backend, faults=Faults(api_key=secret, fail_first=1, rate_limit_every=4,
                                               retry_after=0.01)) as srv:
        run(recs, srv, tmp_path / "c.jsonl", api_key_env="MY_API_KEY")
        assert srv.last_auth == f"Bearer {secret}" and srv.statuses[200] == 4
    assert secret.encode() not in (tmp_path / "c.jsonl").read_bytes()
    assert secret not in caplog.text and "SECRET" not in caplog.text
    # loopback without a key: a placeholder; a remote URL without a key: a named error before any request
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ChatServer(det_backend) as srv:
        run(recs[:1], srv, tmp_path / "c2.jsonl")
        assert srv.last_auth.startswith("Bearer ") and secret not in srv.last_auth
    with pytest.raises(APIKeyError, match="OPENAI_API_KEY"):
        generate_api_candidates(recs, model="m", base_url="https://api.example.com/v1", cache_path=tmp_path / "x")


# --------------------------------------------------------------------------- arguments
@pytest.mark.parametrize("kw,match", [
    ({"n_candidates": 0}, "n_candidates must"), ({"n_candidates": True}, "n_candidates must"),
    ({"n_candidates": 2.0}, "n_candidates must"),
    ({"prompt": "p3"}, "prompt"), ({"temperature": -0.1}, "temperature"), ({"temperature": float("nan")}, "temperature"),
    ({"max_tokens": 0}, "max_tokens"), ({"seed": "0"}, "seed"), ({"max_retries": -1}, "max_retries"),
    ({"timeout": 0}, "timeout"), ({"concurrency": 0}, "concurrency"), ({"model": ""}, "model"),
    ({"base_url": "127.0.0.1:8000"}, "base_url"), ({"base_url": "ftp://x/v1"}, "base_url"),
    ({"api_key_env": "MY KEY"}, "api_key_env"), ({"use_n": "yes"}, "use_n"), ({"backoff": -1}, "backoff"),
])
def test_bad_arguments_raise_named_errors(recs, tmp_path, kw, match):
    args = {"model": "m", "base_url": "http://127.0.0.1:9/v1", "cache_path": tmp_path / "c.jsonl", **kw}
    with pytest.raises(APIGenError, match=match) as err:
        generate_api_candidates(recs, **args)
    assert isinstance(err.value, SDRError) and isinstance(err.value, ValueError)


def test_bad_records_and_cache_paths_raise_named_errors(recs, tmp_path):
    base = {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
    cases = [
        (recs + [recs[0]], tmp_path / "c.jsonl", "twice"),
        ([Rec("a", [], "F.", "I.", None, "test")], tmp_path / "c.jsonl", "no image_paths"),
        ([Rec("a", [str(tmp_path / "missing.png")], "F.", "I.", None, "test")], tmp_path / "c.jsonl", "not found"),
        ([object()], tmp_path / "c.jsonl", "study_id"),
        ("s0", tmp_path / "c.jsonl", "sequence"),
        (recs, tmp_path, "folder"),
        (recs, None, "cache_path"),
    ]
    for records, cache, match in cases:
        with pytest.raises(APIGenError, match=match):
            generate_api_candidates(records, cache_path=cache, **base)
    assert generate_api_candidates([], cache_path=tmp_path / "e.jsonl", **base) == []
