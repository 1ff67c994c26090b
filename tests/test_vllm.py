"""vLLM for real (marked ``vllm``; ``make test-vllm`` installs the community CPU build and runs this module).

One vLLM server for the whole module serves the SmolLM2 HF conversion. Against it: a streamed answer, a battle in the
arena between a vLLM contestant and the embedded llama.cpp one, and a DPO LoRA job trained here on the same
conversion, published as a child of the vLLM contestant and battling its parent on the same server: the adapter is
registered through ``POST /v1/load_lora_adapter`` at its first request, the server's process stays the same, and
the adapter changes the greedy answer (so the server applied it rather than answering as the base).

Skipped unless ``VIBESTUDIO_VLLM_PYTHON`` names the interpreter of a vLLM install (the server is started here) or
``VIBESTUDIO_VLLM_URL`` a running server that serves the same conversion (``VIBESTUDIO_VLLM_MODEL``: its name).
Every step prints its time and the answers, so the lane's log shows what the server said.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from tests.helpers.training import pair_rows
from vibestudio.annotation.snapshots import write_snapshot
from vibestudio.arena.battles import ArenaLimits, ArenaService
from vibestudio.arena.engines.base import Sampling
from vibestudio.arena.engines.vllm import _SERVERS, VLLMEngine, VLLMServer, lora_name, managed_server
from vibestudio.arena.registry import ContestantSpec, ensure_defaults, get_contestant, register
from vibestudio.db.models import Battle, Turn
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch_dpo
from vibestudio.training.report.verdict import release

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not (os.environ.get("VIBESTUDIO_VLLM_URL") or os.environ.get("VIBESTUDIO_VLLM_PYTHON")),
        reason="set VIBESTUDIO_VLLM_PYTHON (a vLLM venv; `make test-vllm` makes one) or VIBESTUDIO_VLLM_URL",
    ),
]

SERVED = "smollm2-vllm"  # the contestant
SERVED_NAME = "smol"  # the name the managed server gives the base model
PROMPT = "What is the capital of France?"
GREEDY = {"temperature": 0.0, "max_tokens": 24, "seed": 1, "repeat_penalty": 1.0}


@dataclass
class Served:
    """The module's vLLM server as contestants see it."""

    hf_base: Path  # the SmolLM2 HF conversion (what the server loads and what DPO trains)
    model_ref: str  # a contestant's model_ref: the HF directory (managed) or the served name (running server)
    config: dict  # a contestant's engine_config
    base_url: str
    served_name: str
    server: VLLMServer | None  # None for a server started elsewhere

    def pid(self) -> int | None:
        return self.server.proc.pid if self.server and self.server.proc else None


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory):
    from transformers.utils import logging as hf_logging

    from vibestudio.arena.default_model import ensure_hf_base

    hf_logging.disable_progress_bar()  # the conversion's bars would fill the lane's log (it runs with -s)
    root = tmp_path_factory.mktemp("vllm")
    t0 = time.monotonic()
    hf_base = ensure_hf_base(root / "smollm2-135m-instruct-hf")
    print(f"\n[vllm] SmolLM2 HF conversion: {time.monotonic() - t0:.0f} s", flush=True)
    url = os.environ.get("VIBESTUDIO_VLLM_URL")
    if url:
        name = os.environ.get("VIBESTUDIO_VLLM_MODEL") or httpx.get(f"{url}/models").json()["data"][0]["id"]
        yield Served(hf_base, name, {"base_url": url}, url, name, None)
        return
    serve = {
        "served_model_name": SERVED_NAME,
        "startup_timeout_s": 900,
        # 1 GiB of KV cache (about 45k tokens of SmolLM2) instead of vLLM's CPU default, 0.3 of the RAM: with that
        # default the DPO job's memory check refused to start on a loaded machine (7.1 GiB needed, 5.1 available).
        "args": ["--kv-cache-memory-bytes", str(1 << 30)],
    }
    t0 = time.monotonic()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VIBESTUDIO_HOME", str(root / "home"))  # the server's log goes under the module's folder
        server = managed_server(str(hf_base), serve)
    print(
        f"[vllm] server pid {server.proc.pid if server.proc else '?'} ready in {time.monotonic() - t0:.0f} s "
        f"(log {server.log_path})",
        flush=True,
    )
    try:
        yield Served(hf_base, str(hf_base), {"serve": serve}, server.base_url, SERVED_NAME, server)
    finally:
        server.stop()
        for key, value in list(_SERVERS.items()):
            if value is server:
                del _SERVERS[key]


def _register_served(db, vllm: Served) -> int:
    with db.session() as s:
        ensure_defaults(s)  # the embedded contestants (llama.cpp on the SmolLM2 GGUF)
        return register(
            s,
            ContestantSpec(
                SERVED, engine="vllm", model_ref=vllm.model_ref, engine_config=vllm.config, sampling=GREEDY
            ),
        )


def _battle(svc: ArenaService, pair: tuple[int, int], prompt: str = PROMPT) -> tuple[int, dict[str, str]]:
    """One voted turn between ``pair``; returns the battle id and each side's answer by public name."""
    bid = svc.start_battle(pair=pair).battle_id
    t0 = time.monotonic()
    last = list(svc.generate_turn(bid, prompt))[-1]
    assert last.done and last.error is None, last.error or (last.left_error, last.right_error)
    reveal = svc.vote(bid, "tie")
    answers = {reveal.left_name: last.left, reveal.right_name: last.right}
    print(f"[vllm] battle {bid} in {time.monotonic() - t0:.1f} s: {answers}", flush=True)
    return bid, answers


def test_the_server_streams_an_answer_with_usage(vllm):
    engine = VLLMEngine(vllm.model_ref, None, vllm.config)
    stream = engine.stream_chat([{"role": "user", "content": "Name a colour."}], Sampling(**GREEDY))
    text = "".join(stream)
    print(
        f"[vllm] base answer: {text!r} ({stream.stats.tokens} tokens, ttft {stream.stats.ttft})", flush=True
    )
    assert text.strip() and stream.stats.tokens > 0 and stream.stats.ttft is not None


@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_a_battle_between_a_vllm_contestant_and_llama_cpp(db, vllm):
    served = _register_served(db, vllm)
    with db.session() as s:
        plain = get_contestant(s, "smollm2-plain")
    assert plain.engine == "llama_cpp"
    bid, answers = _battle(
        ArenaService(db, ArenaLimits(blind_max_tokens=24), rng=random.Random(0)), (served, plain.id)
    )
    assert set(answers) == {SERVED, "smollm2-plain"} and all(a.strip() for a in answers.values())
    with db.session() as s:
        assert s.get(Battle, bid).status == "voted"
        turn = s.scalars(select(Turn).where(Turn.battle_id == bid)).one()
        stored = {turn.answer_a, turn.answer_b}
    assert answers[SERVED] in stored and answers["smollm2-plain"] in stored


@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_a_fresh_dpo_lora_plays_on_the_same_server_without_a_restart(db, vllm):
    parent = _register_served(db, vllm)
    with db.session() as s:
        snap = write_snapshot(s, pair_rows(8), {"source": "test"}).hash
    pid = vllm.pid()
    assert vllm.server is None or pid is not None

    t0 = time.monotonic()
    job_id = launch_dpo(
        db,
        SERVED,
        snap,
        max_steps=2,
        # Two steps at the LoRA default (5e-5) leave the greedy answer as it was; this rate moves it, so the
        # answers below show whether the server applied the adapter.
        learning_rate=2e-3,
        max_length=128,  # the pairs are shorter; the memory estimate halves (7.1 -> 3.9 GiB at batch 4)
        kl_prompts=0,
        drift_prompts=0,
        eval_items=0,
        output_name="smollm2-vllm-dpo",
        base_model=str(vllm.hf_base) if vllm.server is None else "",
    )
    view = wait(db, job_id, timeout=1200)
    trained = [
        x for x in view.log_tail.splitlines() if x.startswith(("[train] step", "[job process] trained"))
    ]
    print(
        f"[vllm] DPO LoRA job {job_id} ({view.status}): {time.monotonic() - t0:.0f} s", *trained, sep="\n  "
    )
    assert view.status == "succeeded", view.error or view.log_tail
    assert len(view.metrics["loss"]) == 2
    with db.session() as s:
        child = get_contestant(s, view.contestant_id)
    assert child.engine == "vllm" and child.engine_config == vllm.config and child.parent_id == parent
    assert child.adapter_ref and (Path(child.adapter_ref) / "adapter_config.json").exists()
    # drift_prompts 0: a skipped report holds the child until a researcher lets it play (logged)
    assert child.state == "held"
    release(db, child.public_name, None, "the vLLM lane plays it without a report")

    _, answers = _battle(
        ArenaService(db, ArenaLimits(blind_max_tokens=24), rng=random.Random(1)), (child.id, parent)
    )
    print(f"[vllm] LoRA answer ({child.public_name}): {answers[child.public_name]!r}", flush=True)
    print(f"[vllm] base answer ({SERVED}): {answers[SERVED]!r}", flush=True)
    # The adapter must change how the answer opens: greedy answers of one model can differ in a late token from
    # run to run (bf16 kernels, batch composition), but not in their first words.
    opening = [" ".join(answers[n].split()[:3]) for n in (child.public_name, SERVED)]
    assert opening[0] and opening[0] != opening[1], f"the LoRA child opens as its base does: {answers}"

    auth = {"Authorization": f"Bearer {vllm.server.api_key}"} if vllm.server is not None else {}
    listed = {
        m["id"]: m for m in httpx.get(f"{vllm.base_url}/models", headers=auth, timeout=10).json()["data"]
    }
    name = lora_name(child.adapter_ref)
    assert name in listed and listed[name].get("parent") == vllm.served_name
    if vllm.server is not None:  # the same process served the base before and the adapter after
        assert vllm.server.proc is not None and vllm.server.proc.poll() is None
        assert vllm.pid() == pid
        assert len([s for s in _SERVERS.values() if s.proc and s.proc.poll() is None]) == 1
