"""A model file's chat template, rendered within bounds.

A GGUF file carries its chat template (``tokenizer.chat_template``): a Jinja program the file's maker
wrote. The llama.cpp engine renders it on a server thread for every turn. The sandbox
(``ImmutableSandboxedEnvironment``) keeps it from Python's internals and from changing its inputs. It does
not stop it spending the thread's time or the process's memory. Nested loops over ``range(100000)`` pin
the thread for hours. A string doubled in a ``namespace``, or a macro's recursion, grows past any memory.

``render_chat`` bounds it:
- **Size**: a template over ``MAX_TEMPLATE_CHARS`` is refused before it is compiled.
- **Time**: the render runs under a trace function of its own thread. It stops the render past
  ``RENDER_SECONDS``. The compiled template is Python code, so every loop step reaches the check.
- **Memory**: a string, list or number a template builds may not pass ``MAX_RENDER_CHARS``. ``*``, ``+``
  and ``**`` are checked before they run. So are every call's arguments (a macro's included), a filter's
  numbers and what is stored in a ``namespace``. The output is counted as it is produced.

A refusal is an ``EngineError`` of kind ``config`` naming the bound. The compiled template is kept per
text.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections import OrderedDict
from typing import Any

from jinja2 import Template
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

from vibestudio.arena.engines.base import EngineError

#: Longest chat template accepted (characters); the templates models ship are a few KB.
MAX_TEMPLATE_CHARS = 64 * 1024
#: Longest string or sequence, and largest number, a template may build, and the longest prompt it may render.
MAX_RENDER_CHARS = 1 << 20
#: Seconds one render may take (a real template takes a millisecond or less).
RENDER_SECONDS = 2.0


class TemplateRefused(EngineError):
    def __init__(self, why: str) -> None:
        super().__init__(f"the model's chat template was refused: {why}", kind="config")


def _too_big(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) > MAX_RENDER_CHARS
    if isinstance(value, str | bytes | list | tuple | dict):
        return len(value) > MAX_RENDER_CHARS
    return False


def _check(*values: Any) -> None:
    for v in values:
        if _too_big(v):
            raise TemplateRefused(f"it builds a value over {MAX_RENDER_CHARS} characters or items")


class _Namespace(Namespace):
    def __setitem__(self, name: str, value: Any) -> None:
        _check(value)
        super().__setitem__(name, value)


def _bounded_filter(f: Any) -> Any:
    @functools.wraps(f)  # keeps the pass_context / pass_eval_context marks
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _check(*[a for a in args if isinstance(a, int)], *[v for v in kwargs.values() if isinstance(v, int)])
        out = f(*args, **kwargs)
        if isinstance(out, str | list | tuple):
            _check(out)
        return out

    return bounded


class _Bounded(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "+", "**"})

    def __init__(self) -> None:
        super().__init__(trim_blocks=True, lstrip_blocks=True)
        self.globals["namespace"] = _Namespace
        self.filters = {k: _bounded_filter(f) for k, f in self.filters.items()}

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        sized = (str, bytes, list, tuple)
        if operator == "*":
            n = right if isinstance(left, sized) else left if isinstance(right, sized) else None
            seq = left if isinstance(left, sized) else right
            if isinstance(n, int) and len(seq) * max(n, 0) > MAX_RENDER_CHARS:
                raise TemplateRefused(f"it builds a value over {MAX_RENDER_CHARS} characters or items")
        elif operator == "+" and isinstance(left, sized) and isinstance(right, sized):
            if len(left) + len(right) > MAX_RENDER_CHARS:
                raise TemplateRefused(f"it builds a value over {MAX_RENDER_CHARS} characters or items")
        elif operator == "**" and isinstance(right, int | float) and abs(right) > 64:
            raise TemplateRefused("it raises a number to a power over 64")
        out = super().call_binop(context, operator, left, right)
        _check(out)
        return out

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _check(*args, *kwargs.values())
        return super().call(__context, __obj, *args, **kwargs)


_ENV = _Bounded()
_COMPILED: OrderedDict[str, Template] = OrderedDict()
_LOCK = threading.Lock()


def _compiled(template: str) -> Template:
    if len(template) > MAX_TEMPLATE_CHARS:
        raise TemplateRefused(f"it is {len(template)} characters, over {MAX_TEMPLATE_CHARS}")
    with _LOCK:
        got = _COMPILED.get(template)
        if got is not None:
            _COMPILED.move_to_end(template)
            return got
    got = _ENV.from_string(template)
    with _LOCK:
        _COMPILED[template] = got
        while len(_COMPILED) > 32:
            _COMPILED.popitem(last=False)
    return got


class _OutOfTime(Exception):
    pass


def render_chat(
    template: str, messages: list[dict[str, str]], bos: str, eos: str, seconds: float = RENDER_SECONDS
) -> str:
    """The prompt ``template`` makes of ``messages`` (with the generation prompt), within the bounds above."""
    compiled = _compiled(template)
    deadline = time.monotonic() + seconds

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise _OutOfTime
        return tracer

    parts: list[str] = []
    size = 0
    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        for piece in compiled.generate(
            messages=messages, add_generation_prompt=True, bos_token=bos, eos_token=eos
        ):
            size += len(piece)
            if size > MAX_RENDER_CHARS:
                raise TemplateRefused(f"its prompt is over {MAX_RENDER_CHARS} characters")
            parts.append(piece)
    except _OutOfTime:
        raise TemplateRefused(f"it took over {seconds:g} s to render") from None
    finally:
        sys.settrace(before)
    return "".join(parts)
