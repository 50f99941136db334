"""End-to-end tests of sdrlib.serve (the local OpenAI-compatible chat server and the served policy).

The real ``openai`` client against the real HTTP server on 127.0.0.1 (in a thread), as in tests/apigen; the
deterministic backend and the candidate run are tests/chat_helpers.py's.
"""

from __future__ import annotations

import json
import types

import pytest
from PIL import Image

from sdrlib import apigen
from sdrlib.reports import build_template
from sdrlib.serve import ChatServer, Faults, PolicyBackend, ServeError, images_from_messages
from chat_helpers import det_backend, run, chat_records


@pytest.fixture()
def recs(tmp_path):
    return chat_records(tmp_path)


# --------------------------------------------------------------------------- server behaviour
def test_server_adapts_to_missing_n_and_seed_and_lists_models(recs, tmp_path):
    import openai

    with ChatServer(det_backend, model="tiny", faults=Faults(support_n=False, support_seed=False)) as srv:
        out, st = run(recs[:2], srv, tmp_path / "c.jsonl", concurrency=2)
        assert sorted(st.adapted) == ["n", "seed"] and st.failed == 0 and st.generated == 6
        assert srv.statuses[400] >= 2 and srv.statuses[200] == 6
        client = openai.OpenAI(api_key="x", base_url=srv.url, max_retries=0)
        assert [m.id for m in client.models.list()] == ["tiny"]
    # GPT-5-style: max_tokens and temperature refused -> max_completion_tokens, default temperature
    with ChatServer(det_backend, faults=Faults(refuse_params=("max_tokens", "temperature"))) as srv:
        out2, st2 = run(recs[:2], srv, tmp_path / "c2.jsonl", concurrency=1)
        assert sorted(st2.adapted) == ["max_tokens", "temperature"] and st2.generated == 6
        assert "max_completion_tokens" in srv.last_params and "temperature" not in srv.last_params
        assert srv.statuses == {400: 2, 200: 2}
    sent = [json.loads(x)["sent"] for x in (tmp_path / "c2.jsonl").read_text().splitlines()]
    assert all(d["max_completion_tokens"] == 512 and "temperature" not in d for d in sent)
    with pytest.raises(ServeError):
        ChatServer(det_backend, port=70000)


def test_remote_and_broken_image_urls_are_refused_with_400():
    import openai

    def image_backend(messages, n, *args):
        return [f"{len(images_from_messages(messages))} image(s)"] * n

    with ChatServer(image_backend) as srv:
        client = openai.OpenAI(api_key="x", base_url=srv.url, max_retries=0)
        for url in ("https://example.com/x.png", "data:image/png;base64,@@@", "data:image/png;base64,aGVsbG8="):
            with pytest.raises(openai.BadRequestError, match="data URL|decoded"):
                client.chat.completions.create(model="m", messages=[
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}])
        ok = client.chat.completions.create(model="m", n=2, messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + _b64_png()}}]}])
        assert [c.message.content for c in ok.choices] == ["1 image(s)", "1 image(s)"]
        assert srv.statuses == {400: 3, 200: 1}


def _b64_png() -> str:
    import base64
    import io

    buf = io.BytesIO()
    Image.new("L", (8, 8), 128).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


# --------------------------------------------------------------------------- tiny local policy
def test_a_tiny_local_policy_served_answers_through_the_openai_client(recs, tmp_path):
    import torch
    from sdrlib import models
    from sdrlib.serve import main
    from training_helpers import REPORTS

    torch.set_num_threads(1)
    texts = [build_template(f, i) for f, i in REPORTS.values()] * 10
    spec = models.TinyVLSpec(hidden_size=32, layers=1, heads=2, kv_heads=1, head_dim=16, intermediate_size=64,
                             vision_hidden_size=32, vision_layers=1, vision_heads=2, vision_intermediate_size=64,
                             image_size=64, mrope_section=(4, 2, 2))
    model, proc = models.build_tiny_policy(texts, spec, vocab_size=320, seed=0)
    path = models.save_policy(model, proc, tmp_path / "policy")
    backend = PolicyBackend.from_path(path, max_new_tokens=6)
    with ChatServer(backend, model="policy") as srv:
        out, st = run(recs[:1], srv, tmp_path / "c.jsonl", n_candidates=2, max_tokens=6, use_n=True)
        assert srv.requests == 1 and st.generated == 2
    assert len(out) == 1 and len(out[0]) == 2 and all(isinstance(t, str) for t in out[0])
    # the served candidates are the policy's own seeded samples for that image
    img = Image.open(recs[0].image_paths[0]).convert("RGB")
    from sdrlib.generation import generate_candidates

    seed0 = apigen._sample_seed(0, recs[0].study_id, 0)
    assert out[0] == generate_candidates(backend.model, backend.processor, [[img]], 2, seed=seed0,
                                         max_new_tokens=6)[0]
    assert main(["--policy", str(tmp_path / "nowhere")]) == 2
    # serve_policy: the same policy behind a loopback server for a with block (notebook 05's selection.api_serve)
    from sdrlib.serve import serve_policy

    with serve_policy(path, max_new_tokens=6, model="policy") as url:
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0/v1")
        again, st = run(recs[:1], types.SimpleNamespace(url=url), tmp_path / "c2.jsonl", n_candidates=2, max_tokens=6, use_n=True)
        assert again == out and st.generated == 2
    _, st = run(recs[1:2], types.SimpleNamespace(url=url), tmp_path / "c3.jsonl", n_candidates=1, max_tokens=6, max_retries=0)
    assert st.failed == 1 and st.generated == 0  # the server is gone once the block ends
    with serve_policy(None, "https://api.example.com/v1") as url:  # no policy: the provider's URL as given
        assert url == "https://api.example.com/v1"
    with pytest.raises(ServeError, match="binds 127.0.0.1 only"):
        with serve_policy(path, "https://api.example.com/v1"):
            pass
