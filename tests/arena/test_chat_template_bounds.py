"""A model file's chat template cannot pin a server thread or fill its memory (``arena.engines.chat_template``):
the templates a hostile GGUF could carry (nested loops, a string doubled in a namespace, a macro that recurses on
a growing argument, a filter asked for a huge width, an oversized template) are refused quickly with a
``config`` engine error, while a real template renders as before."""

from __future__ import annotations

import threading
import time

import pytest

from vibestudio.arena.engines import chat_template
from vibestudio.arena.engines.base import EngineError
from vibestudio.arena.engines.llamacpp import render_chat

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]

HOSTILE = {
    "nested loops": "{% for i in range(99999) %}{% for j in range(99999) %}{{ '' }}{% endfor %}{% endfor %}",
    "silent nested loops": "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
    "loops over a long literal": "{% set s = '" + "x" * 30000 + "' %}{% for a in s %}{% for b in s %}"
    "{% endfor %}{% endfor %}",
    "doubling in a namespace": "{% set ns = namespace(s='x') %}{% for i in range(64) %}"
    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
    "string times a number": "{{ 'x' * 10**10 }}",
    "a power tower": "{{ 9 ** 9 ** 9 }}",
    "recursing macro": "{% macro f(s) %}{{ f(s ~ s) }}{% endmacro %}{{ f('x') }}",
    "a huge width": "{{ 'x'|center(10**10) }}",
    "a prompt too long": "{% for i in range(99999) %}{{ 'y' * 100 }}{% endfor %}",
    "a template too large": "{# " + "z" * (chat_template.MAX_TEMPLATE_CHARS + 1) + " #}",
}


def test_a_real_template_renders_as_before():
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    plain = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(CHATML)
    want = plain.render(messages=MESSAGES, add_generation_prompt=True, bos_token="<s>", eos_token="</s>")
    assert render_chat(CHATML, MESSAGES, "<s>", "</s>") == want
    t0 = time.perf_counter()
    for _ in range(200):
        render_chat(CHATML, MESSAGES * 8, "<s>", "</s>")
    assert (time.perf_counter() - t0) / 200 < 0.02  # the bounds cost little


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_template_is_refused_quickly(name):
    done: dict[str, object] = {}

    def run() -> None:
        try:
            done["out"] = render_chat(HOSTILE[name], MESSAGES, "", "")
        except BaseException as exc:  # noqa: BLE001  (what the thread ended with)
            done["out"] = exc

    t0 = time.perf_counter()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(15)
    took = time.perf_counter() - t0
    assert not worker.is_alive(), f"{name}: still rendering after {took:.0f} s"
    err = done["out"]
    assert isinstance(err, EngineError) and err.kind == "config", (name, err)
    assert "chat template was refused" in str(err)
    assert took < chat_template.RENDER_SECONDS + 3


def test_the_thread_keeps_its_tracer():
    import sys

    def mine(frame, event, arg):
        return None

    sys.settrace(mine)
    try:
        render_chat(CHATML, MESSAGES, "", "")
        assert sys.gettrace() is mine
    finally:
        sys.settrace(None)
