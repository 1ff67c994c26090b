"""Engines, keys and URLs, attacked in-process against real listeners: a persona cannot have a server secret sent
anywhere (keys only from the operator's allow-list or the ``VIBESTUDIO_KEY_`` prefix, checked when added and
again when the key is read), cannot reach loopback, private or link-local addresses unless the operator allows
them (checked again at connect time, so DNS rebinding and redirects are refused too), the judge check obeys the
same policy, and a managed vLLM server runs only the operator's interpreter, on loopback, with vetted flags and a
key of its own."""

from __future__ import annotations

import socket

import pytest

from tests.security._engine_helpers import Trap, fake_vllm_python, started
from vibestudio.arena.engines import egress
from vibestudio.arena.engines.base import EngineError, Sampling
from vibestudio.arena.engines.openai_http import OpenAIEngine, validate_config
from vibestudio.arena.engines.vllm import (
    VLLMEngine,
    _stop_all,
    server_command,
    validate_vllm_config,
    vetted_args,
)
from vibestudio.arena.personas import PersonaError, spec_from_mapping
from vibestudio.arena.registry import ContestantInfo
from vibestudio.common.settings import KeyEnvRefused, check_key_env, environment_value

SHORT = Sampling(temperature=0.0, max_tokens=4, seed=1)
SECRET = "server-secret-value-7f3a"
HI = [{"role": "user", "content": "Hi"}]


@pytest.fixture
def trap():
    t = Trap()
    yield t
    t.close()


@pytest.fixture
def strict(monkeypatch):
    """The studio as shipped: no private host allowed, no key listed."""
    monkeypatch.delenv("VIBESTUDIO_ENGINE_ALLOWED_HOSTS", raising=False)
    monkeypatch.delenv("VIBESTUDIO_ENGINE_KEY_ENVS", raising=False)
    monkeypatch.setenv("STUDIO_SECRET", SECRET)


def _persona(url: str, key_env: str | None = None, engine: str = "openai") -> dict:
    cfg = {"base_url": url} | ({"api_key_env": key_env} if key_env is not None else {})
    return {"name": "attacker", "engine": engine, "model": "m", "engine_config": cfg}


# --- secrets by reference -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["STUDIO_SECRET", "HOME", "PATH", "ARGILLA_API_KEY", "VIBESTUDIO_DATABASE_URL", "HF_TOKEN", "A=B", "", 7],
)
def test_a_persona_cannot_name_a_variable_that_is_not_an_engine_key(strict, trap, monkeypatch, name):
    monkeypatch.setenv("VIBESTUDIO_ENGINE_ALLOWED_HOSTS", f"127.0.0.1:{trap.port}")
    with pytest.raises(PersonaError, match="api_key_env") as err:
        spec_from_mapping(_persona(trap.url, name))  # type: ignore[arg-type]
    assert SECRET not in str(err.value)
    assert not isinstance(name, str) or len(name) < 3 or name not in str(err.value)  # the name is not echoed
    with pytest.raises(KeyEnvRefused):
        environment_value(str(name))  # the one reader refuses it too
    assert trap.seen == []


def test_the_operator_list_and_the_prefix_are_the_only_ways_in(strict, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_KEY_HOSTED", "k1")
    monkeypatch.setenv("OPENAI_API_KEY", "k2")
    check_key_env("VIBESTUDIO_KEY_HOSTED")
    with pytest.raises(KeyEnvRefused):
        check_key_env("OPENAI_API_KEY")
    monkeypatch.setenv("VIBESTUDIO_ENGINE_KEY_ENVS", "OPENAI_API_KEY@api.openai.com, VIBESTUDIO_DATABASE_URL")
    check_key_env("OPENAI_API_KEY")
    assert environment_value("OPENAI_API_KEY") == "k2"
    with pytest.raises(KeyEnvRefused):  # a studio setting is never an engine key, even when listed
        check_key_env("VIBESTUDIO_DATABASE_URL")


def test_a_key_bound_to_a_host_is_not_sent_elsewhere(strict, trap, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_ENGINE_ALLOWED_HOSTS", f"127.0.0.1:{trap.port}")
    monkeypatch.setenv("VIBESTUDIO_ENGINE_KEY_ENVS", "OPENAI_API_KEY@api.openai.com")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with pytest.raises(ValueError, match="only for other hosts"):
        validate_config({"base_url": trap.url, "api_key_env": "OPENAI_API_KEY"})
    assert trap.seen == []


def test_a_key_delisted_after_registration_is_not_read_at_request_time(trap, monkeypatch):
    """Defence in depth: the key is checked again where it is read, so a stored contestant whose variable the
    operator no longer allows sends nothing."""
    monkeypatch.setenv("STUDIO_SECRET", SECRET)
    monkeypatch.setenv("VIBESTUDIO_ENGINE_KEY_ENVS", "STUDIO_SECRET")
    engine = OpenAIEngine("m", {"base_url": trap.url, "api_key_env": "STUDIO_SECRET"})
    monkeypatch.delenv("VIBESTUDIO_ENGINE_KEY_ENVS")
    with pytest.raises(EngineError, match="api_key_env") as err:
        "".join(engine.stream_chat(HI, SHORT))
    assert err.value.kind == "config" and SECRET not in str(err.value)
    assert trap.seen == []
    with pytest.raises(EngineError, match="api_key_env"):  # and it cannot be built any more
        OpenAIEngine("m", {"base_url": trap.url, "api_key_env": "STUDIO_SECRET"})


def test_an_allowed_key_reaches_an_allowed_server(trap, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_KEY_TRAP", "allowed-key")
    engine = OpenAIEngine("m", {"base_url": trap.url, "api_key_env": "VIBESTUDIO_KEY_TRAP"})
    assert "".join(engine.stream_chat(HI, SHORT)) == "trapped"
    assert [s.authorization for s in trap.seen] == ["Bearer allowed-key"]


# --- base URL policy (SSRF) -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/v1",
        "http://localhost:{port}/v1",
        "http://[::1]:{port}/v1",
        "http://[::ffff:127.0.0.1]:{port}/v1",
        "http://0.0.0.0:{port}/v1",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.5/v1",
        "http://192.168.1.1/v1",
        "http://100.64.0.1/v1",
        "http://224.0.0.1/v1",
        "http://2130706433:{port}/v1",
    ],
)
def test_non_public_addresses_are_refused_unless_allowed(strict, trap, url):
    url = url.format(port=trap.port)
    with pytest.raises(PersonaError, match="base_url"):
        spec_from_mapping(_persona(url))
    with pytest.raises(EngineError):
        "".join(OpenAIEngine("m", {"base_url": url}).stream_chat(HI, SHORT))
    assert trap.seen == []


@pytest.mark.parametrize(
    "url",
    [
        "http://user:pw@api.example.com/v1",
        "http://api.example.com/v1?x=1",
        "ftp://api.example.com",
        "http:///v1",
    ],
)
def test_malformed_or_credentialed_urls_are_refused(strict, url):
    with pytest.raises(egress.UrlRefused):
        egress.split_url(url)


def test_the_operator_allows_hosts_ports_and_ranges(strict, trap, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_ENGINE_ALLOWED_HOSTS", f"127.0.0.1:{trap.port + 1}")
    with pytest.raises(egress.UrlRefused):  # another port of the same host is not allowed
        egress.check_url(trap.url)
    monkeypatch.setenv("VIBESTUDIO_ENGINE_ALLOWED_HOSTS", f"127.0.0.0/8:{trap.port}")
    egress.check_url(trap.url)
    assert "".join(OpenAIEngine("m", {"base_url": trap.url}).stream_chat(HI, SHORT)) == "trapped"
    assert len(trap.seen) == 1
    monkeypatch.setenv("VIBESTUDIO_ENGINE_PUBLIC_URLS", "false")
    with pytest.raises(egress.UrlRefused):
        egress.check_url("http://93.184.216.34/v1")
    monkeypatch.delenv("VIBESTUDIO_ENGINE_PUBLIC_URLS")
    egress.check_url("http://93.184.216.34/v1")


def test_a_name_that_rebinds_to_loopback_is_refused_at_connect_time(strict, trap, monkeypatch):
    """The name does not resolve when the persona is added (accepted: it is checked at connect), then resolves
    to the listener on 127.0.0.1. The client resolves and checks it itself, so nothing reaches the listener."""
    url = f"http://rebind.example:{trap.port}/v1"
    engine = OpenAIEngine("m", {"base_url": url})
    real = socket.getaddrinfo

    def rebound(host, *args, **kwargs):
        return real("127.0.0.1", *args, **kwargs) if host == "rebind.example" else real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebound)
    with pytest.raises(EngineError, match="policy") as err:
        "".join(engine.stream_chat(HI, SHORT))
    assert err.value.kind == "down"
    assert trap.seen == []


def test_redirects_are_not_followed(trap, monkeypatch):
    inner = Trap()
    try:
        trap.redirect_to = inner.url.removesuffix("/v1")
        monkeypatch.setenv("VIBESTUDIO_ENGINE_ALLOWED_HOSTS", f"127.0.0.1:{trap.port}")
        monkeypatch.setenv("VIBESTUDIO_KEY_TRAP", "k")
        engine = OpenAIEngine("m", {"base_url": trap.url, "api_key_env": "VIBESTUDIO_KEY_TRAP"})
        with pytest.raises(EngineError, match="redirect"):
            "".join(engine.stream_chat(HI, SHORT))
        assert len(trap.seen) == 1 and inner.seen == []
    finally:
        inner.close()


def test_the_judge_check_obeys_the_policy(strict, trap):
    from vibestudio.training.jobs.preflight import judge_unreachable

    judge = ContestantInfo(
        1,
        "judge",
        "openai",
        "m",
        None,
        "",
        "",
        {},
        [],
        None,
        None,
        None,
        True,
        engine_config={"base_url": trap.url},
    )
    problem = judge_unreachable(judge)
    assert problem is not None and "VIBESTUDIO_ENGINE_ALLOWED_HOSTS" in problem
    assert trap.seen == []


# --- managed vLLM servers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--trust-remote-code"],
        ["--host", "0.0.0.0"],
        ["--api-key", "x"],
        ["--chat-template", "/etc/passwd"],
        ["--dtype=--trust-remote-code"],
        ["--dtype", "--trust-remote-code"],
        ["--seed", "1;id"],
        ["--enforce-eager=1"],
        ["--tensor-parallel-size"],
        ["--middleware", "evil.plugin"],
        ["-O3"],
    ],
)
def test_only_vetted_vllm_flags_with_typed_values(args):
    with pytest.raises(ValueError, match="args"):
        vetted_args(args)
    with pytest.raises(PersonaError, match="args"):
        spec_from_mapping(
            {"name": "v", "engine": "vllm", "model": "/m", "engine_config": {"serve": {"args": args}}}
        )


def test_vetted_flags_come_out_normalised():
    assert vetted_args(["--dtype=bfloat16", "--seed", "7", "--enforce-eager"]) == [
        "--dtype",
        "bfloat16",
        "--seed",
        "7",
        "--enforce-eager",
    ]


@pytest.mark.parametrize(
    "serve",
    [
        {"python": "/bin/sh"},
        {"host": "0.0.0.0"},
        {"model": "--trust-remote-code"},
        {"model": "../../etc"},
        {"served_model_name": "a b; c"},
        {"port": "80; id"},
        {"gpu_memory_utilization": "1 --trust-remote-code"},
        {"max_model_len": True},
    ],
)
def test_serve_fields_from_a_persona_are_typed(serve):
    with pytest.raises(ValueError):
        validate_vllm_config({"serve": serve}, "/models/m")


def test_the_command_line_holds_only_checked_values():
    argv = server_command("/opt/vllm/bin/python", "/models/smol", "base", 8123, {"args": ["--seed", "1"]})
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert argv[0] == "/opt/vllm/bin/python" and argv[-2:] == ["--seed", "1"]
    with pytest.raises(ValueError):
        server_command("/opt/vllm/bin/python", "-x", "base", 8123, {})


def test_a_managed_server_runs_the_operators_interpreter_on_loopback_with_its_own_key(tmp_path, monkeypatch):
    python, record = fake_vllm_python(tmp_path / "vllm")
    monkeypatch.setenv("VIBESTUDIO_VLLM_PYTHON", str(python))
    monkeypatch.setenv("VIBESTUDIO_KEY_LEAK", SECRET)
    monkeypatch.delenv("VIBESTUDIO_ENGINE_ALLOWED_HOSTS")  # a managed server needs no allowance
    try:
        engine = VLLMEngine(
            "/models/smol", None, {"serve": {"startup_timeout_s": 60, "args": ["--seed", "3"]}}
        )
        assert "".join(engine.stream_chat(HI, SHORT)) == "served"
        (run,) = started(record)
        argv = run["argv"]
        assert argv[argv.index("--host") + 1] == "127.0.0.1"
        assert run["key"] and len(run["key"]) >= 32 and run["key"] not in " ".join(argv)
        assert not [name for name in run["env"] if name.startswith("VIBESTUDIO_")]
        import httpx

        assert httpx.get(f"{engine.base_url}/models").status_code == 401  # no key, no answer
    finally:
        _stop_all()
