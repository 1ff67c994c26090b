"""OpenAI-compatible engine against a real ``python -m llama_cpp.server`` (SmolLM2 GGUF), plus a scripted server
at the HTTP edge for what a healthy server never does (garbage, hangs, mid-stream errors).

``FakeOpenAI`` (``tests.helpers.fake_openai``) picks its behaviour by the requested model name.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest
from sqlalchemy import select

from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.servers import free_port
from vibestudio.arena.default_model import default_gguf_path
from vibestudio.arena.engines.base import EngineError, Sampling
from vibestudio.arena.engines.factory import get_engine
from vibestudio.arena.engines.openai_http import OpenAIEngine, validate_config
from vibestudio.db.models import Contestant, Turn


@pytest.fixture
def fake_openai():
    fake = FakeOpenAI()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def llama_server():
    """A real llama-cpp-python OpenAI server on the embedded SmolLM2 GGUF, with an API key."""
    port = free_port()
    key = "test-key-123"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(default_gguf_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "1024",
            "--n_threads",
            "1",
            "--api_key",
            key,
            "--model_alias",
            "smol",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail("llama_cpp.server exited at start")
        try:
            if httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {key}"}, timeout=2).is_success:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("llama_cpp.server did not start in 90 s")
    yield url, key
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


SHORT = Sampling(temperature=0.0, max_tokens=12, seed=1)


def test_streams_from_real_llama_server_with_key_from_env(llama_server, monkeypatch):
    url, key = llama_server
    monkeypatch.setenv("VS_TEST_LLAMA_KEY", key)
    engine = OpenAIEngine("smol", {"base_url": url, "api_key_env": "VS_TEST_LLAMA_KEY"})
    stream = engine.stream_chat([{"role": "user", "content": "Name a colour."}], SHORT)
    deltas = list(stream)
    assert len(deltas) > 1 and "".join(deltas).strip()
    st = stream.stats
    assert 1 < st.tokens <= 12
    assert st.ttft is not None and 0 < st.ttft < st.seconds
    assert st.tokens_per_s and st.tokens_per_s > 0


def test_api_key_is_read_at_request_time_and_never_kept(llama_server, monkeypatch):
    url, key = llama_server
    engine = OpenAIEngine("smol", {"base_url": url, "api_key_env": "VS_TEST_LLAMA_KEY"})
    assert key not in json.dumps(vars(engine), default=str)
    monkeypatch.delenv("VS_TEST_LLAMA_KEY", raising=False)
    with pytest.raises(EngineError, match="VS_TEST_LLAMA_KEY") as missing:
        list(engine.stream_chat([{"role": "user", "content": "Hi"}], SHORT))
    assert missing.value.kind == "config"
    monkeypatch.setenv("VS_TEST_LLAMA_KEY", "wrong")
    with pytest.raises(EngineError, match="HTTP 401") as wrong:
        list(engine.stream_chat([{"role": "user", "content": "Hi"}], SHORT))
    assert wrong.value.kind == "config" and "wrong" not in str(wrong.value)
    with pytest.raises(ValueError, match="api_key_env"):
        validate_config({"base_url": url, "api_key": key})


def test_prefill_opens_the_answer_and_is_not_counted(llama_server, monkeypatch):
    url, key = llama_server
    monkeypatch.setenv("VS_TEST_LLAMA_KEY", key)
    engine = OpenAIEngine("smol", {"base_url": url, "api_key_env": "VS_TEST_LLAMA_KEY"})
    stream = engine.stream_chat([{"role": "user", "content": "Hi"}], SHORT, prefill="Well, ")
    text = "".join(stream)
    assert text.startswith("Well, ") and len(text) > len("Well, ")
    assert stream.stats.tokens <= 12


def test_server_down_is_reported_as_down_without_crashing():
    engine = OpenAIEngine("x", {"base_url": f"http://127.0.0.1:{free_port()}/v1", "timeout_s": 3})
    with pytest.raises(EngineError) as err:
        list(engine.stream_chat([{"role": "user", "content": "Hi"}], SHORT))
    assert err.value.kind == "down"
    assert "127.0.0.1" not in err.value.public_message


@pytest.mark.parametrize(
    ("model", "kind"),
    [("garbage", "garbage"), ("badjson", "garbage"), ("midfail", "failed"), ("http500", "failed")],
)
def test_garbage_and_failures_raise_engine_errors(fake_openai, model, kind):
    engine = OpenAIEngine(model, fake_openai.config())
    with pytest.raises(EngineError) as err:
        list(engine.stream_chat([{"role": "user", "content": "Hi"}], SHORT))
    assert err.value.kind == kind
    assert fake_openai.url not in err.value.public_message and model not in err.value.public_message


def test_read_timeout_is_a_timeout(fake_openai):
    fake_openai.hang_s = 2.0
    engine = OpenAIEngine("hang", fake_openai.config(timeout_s=0.5))
    with pytest.raises(EngineError) as err:
        list(engine.stream_chat([{"role": "user", "content": "Hi"}], SHORT))
    assert err.value.kind == "timeout"


def test_request_body_carries_sampling_and_prefill(fake_openai):
    engine = get_engine("openai", "echo", None, fake_openai.config(extra_body={"top_k": 5}))
    sampling = Sampling(temperature=0.3, top_p=0.8, max_tokens=7, seed=4)
    text = "".join(engine.stream_chat([{"role": "user", "content": "Hi"}], sampling, prefill="Sure: "))
    body = fake_openai.requests[-1]
    assert (
        body["temperature"] == 0.3 and body["top_p"] == 0.8 and body["max_tokens"] == 7 and body["seed"] == 4
    )
    assert body["messages"][-1] == {"role": "assistant", "content": "Sure: "}
    assert body["continue_final_message"] is True and body["top_k"] == 5 and body["_auth"] is None
    assert text.startswith("Sure: user=Hi")


def test_config_is_validated_with_field_names():
    with pytest.raises(ValueError, match="base_url"):
        validate_config({})
    with pytest.raises(ValueError, match="timout_s"):
        validate_config({"base_url": "http://x/v1", "timout_s": 3})
    with pytest.raises(ValueError, match="http"):
        validate_config({"base_url": "ftp://x"})
    with pytest.raises(EngineError) as err:
        get_engine("openai", "m", None, {"base_url": "http://x/v1", "bogus": 1})
    assert err.value.kind == "config"


def test_battle_between_http_engine_and_in_process_llama(db, llama_server, monkeypatch):
    from vibestudio.arena.battles import ArenaService
    from vibestudio.arena.registry import ContestantSpec, register

    url, key = llama_server
    monkeypatch.setenv("VS_TEST_LLAMA_KEY", key)
    with db.session() as s:
        register(
            s,
            ContestantSpec(
                "served",
                engine="openai",
                model_ref="smol",
                engine_config={"base_url": url, "api_key_env": "VS_TEST_LLAMA_KEY"},
                sampling={"max_tokens": 10, "temperature": 0.0},
            ),
        )
        register(s, ContestantSpec("local", sampling={"max_tokens": 10, "temperature": 0.0}))
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    last = list(svc.generate_turn(bid, "Say hi."))[-1]
    assert last.done and last.error is None and last.left.strip() and last.right.strip()
    with db.session() as s:
        t = s.scalars(select(Turn)).one()
        assert t.tokens_a and t.tokens_b and t.tps_a and t.tps_b and t.latency_a and t.latency_b
        stored = json.dumps([c.engine_config for c in s.scalars(select(Contestant))])
    assert "VS_TEST_LLAMA_KEY" in stored and key not in stored
