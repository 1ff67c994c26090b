"""Every handler that can refuse answers in place (#39): an event of the built app whose handler can raise a
``Refusal`` (``raise refuse(...)``, ``raise user_error(...)`` of anything but a role denial, ``raise Refusal(...)``,
itself or through a function of the studio it calls) must be attached with ``studio.errors.wire``, so the refusal
reads in the status element next to its button instead of a red Error toast.

What can refuse is read from the source (``refusing_functions``: each function of ``studio`` by its qualified
name, and what it calls by name, followed through nested functions, the module's own and those it imports from
``studio``); which events are wired is read from the built app (``wire`` marks the handler it wraps).
"""

from __future__ import annotations

import ast
import importlib
import textwrap
from pathlib import Path

import gradio as gr

ROOT = Path(__file__).resolve().parents[2]
REFUSERS = {"refuse", "Refusal"}  # calls whose value, raised, is always a Refusal
DENIALS = {"PermissionDenied"}  # user_error of these is a plain gr.Error (studio.errors.user_error)


def _names(node: ast.expr | None) -> set[str]:
    """The exception names an ``except`` clause catches (``except (A, b.B)`` -> {A, B})."""
    if node is None:
        return {"BaseException"}
    if isinstance(node, ast.Tuple):
        return set().union(*(_names(e) for e in node.elts))
    if isinstance(node, ast.Attribute):
        return {node.attr}
    return {node.id} if isinstance(node, ast.Name) else {"?"}


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else None


class _Scope:
    """One function of a module: its qualified name, whether it raises a Refusal itself, what it calls by name."""

    def __init__(self, qualname: str, parent: _Scope | None) -> None:
        self.qualname, self.parent = qualname, parent
        self.refuses = False
        self.calls: set[str] = set()
        self.local_defs: dict[str, _Scope] = {}


class _Reader(ast.NodeVisitor):
    def __init__(self, module: str) -> None:
        self.module = module
        self.top = _Scope("", None)
        self.scope = self.top
        self.caught: list[set[str]] = []  # the except clauses the current node sits in
        self.scopes: list[_Scope] = []

    def _enter(self, name: str, node: ast.AST) -> None:
        prefix = "" if self.scope is self.top else f"{self.scope.qualname}.<locals>."
        child = _Scope(prefix + name, self.scope)
        if name != "<lambda>":
            self.scope.local_defs[name] = child
        self.scopes.append(child)
        outer, caught = self.scope, self.caught
        self.scope, self.caught = child, []
        for sub in ast.iter_child_nodes(node):
            self.visit(sub)
        self.scope, self.caught = outer, caught

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._enter(node.name, node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._enter(node.name, node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._enter("<lambda>", node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        prefix = "" if self.scope is self.top else f"{self.scope.qualname}.<locals>."
        holder = _Scope(prefix + node.name, self.scope)
        outer, self.scope = self.scope, holder
        for sub in node.body:  # methods: qualname Class.method
            if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                self._enter(sub.name, sub)
                holder.local_defs[sub.name].qualname = f"{holder.qualname}.{sub.name}"
            else:
                self.visit(sub)
        self.scope = outer

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self.caught.append(_names(node.type))
        self.generic_visit(node)
        self.caught.pop()

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call):
            name = _callee(exc)
            if name in REFUSERS:
                self.scope.refuses = True
            elif name == "user_error":
                arg = exc.args[0] if exc.args else None
                denial = (
                    isinstance(arg, ast.Name) and bool(self.caught) and self.caught[-1] <= DENIALS
                )  # ``except PermissionDenied as exc: raise user_error(exc)``: a denial, not a refusal
                self.scope.refuses |= not denial
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _callee(node)
        if name:
            self.scope.calls.add(name)
        self.generic_visit(node)


def _imports(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """``from vibestudio.studio.x import f`` -> {"f": ("vibestudio.studio.x", "f")}."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("vibestudio.studio"):
            for a in node.names:
                out[a.asname or a.name] = (node.module, a.name)
    return out


def refusing_functions(sources: dict[str, str]) -> dict[str, bool]:
    """``{"module:qualname": can raise a Refusal}`` for every function in ``sources`` (module name -> source)."""
    readers, imports = {}, {}
    for module, source in sources.items():
        tree = ast.parse(source)
        reader = _Reader(module)
        reader.visit(tree)
        readers[module], imports[module] = reader, _imports(tree)

    def resolve(module: str, scope: _Scope, name: str) -> _Scope | None:
        s: _Scope | None = scope
        while s is not None:  # nested functions, then the module's own
            if name in s.local_defs:
                return s.local_defs[name]
            s = s.parent
        target = imports[module].get(name)
        if target and target[0] in readers:
            return readers[target[0]].top.local_defs.get(target[1])
        return None

    refuses = {id(s): s.refuses for r in readers.values() for s in r.scopes}
    changed = True
    while changed:  # what a function calls can refuse for it
        changed = False
        for module, r in readers.items():
            for s in r.scopes:
                if refuses[id(s)]:
                    continue
                if any((t := resolve(module, s, c)) is not None and refuses[id(t)] for c in s.calls):
                    refuses[id(s)] = changed = True
    out: dict[str, bool] = {}
    for module, r in readers.items():
        for s in r.scopes:
            key = f"{module}:{s.qualname}"
            out[key] = out.get(key, False) or refuses[id(s)]
    return out


def studio_sources() -> dict[str, str]:
    out = {}
    for path in sorted((ROOT / "studio").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[f"vibestudio.{module}"] = path.read_text(encoding="utf-8")  # the name it runs under
    return out


def unwired_refusals(demo: gr.Blocks, refusing: dict[str, bool]) -> list[str]:
    """The events of ``demo`` whose handler can refuse and is not wrapped by ``studio.errors.wire``."""
    found = []
    for block_fn in demo.fns.values():
        fn = block_fn.fn
        if fn is None or getattr(fn, "refusals_in_place", False):
            continue
        key = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', '?')}"
        if not key.startswith("vibestudio.studio."):
            continue
        assert key in refusing, f"the source reader did not find the handler {key}"
        if refusing[key]:
            targets = [
                f"{getattr(demo.blocks.get(i), 'elem_id', None) or type(demo.blocks.get(i)).__name__}.{e}"
                for i, e in block_fn.targets
            ]
            found.append(f"{key} ({', '.join(targets)})")
    return found


def test_every_handler_that_can_refuse_is_wired(fresh_app):
    refusing = refusing_functions(studio_sources())
    assert sum(refusing.values()) > 30  # the reader sees the pages' refusals (a broken reader finds none)
    assert unwired_refusals(fresh_app, refusing) == []


SAMPLE = """
from vibestudio.studio.errors import refuse, user_error, wire
from vibestudio.accounts import PermissionDenied

def _check(x):
    if not x:
        raise refuse("Pick one.")

def build(ctx):
    def direct(x):
        if not x:
            raise refuse("Pick one.")

    def through_helper(x):
        _check(x)

    def converted(x):
        try:
            ctx.run(x)
        except ValueError as exc:
            raise user_error(exc) from exc

    def denial_only(request):
        try:
            ctx.access.user_id(request)
        except PermissionDenied as exc:
            raise user_error(exc) from exc

    def reads(x):
        return x

    class Tab:
        def method(self):
            raise refuse("no")
"""


def test_the_reader_finds_refusals_direct_through_helpers_and_converted():
    got = refusing_functions({"vibestudio.studio.pages.sample": textwrap.dedent(SAMPLE)})
    p = "vibestudio.studio.pages.sample:"
    assert got[p + "build.<locals>.direct"] and got[p + "build.<locals>.through_helper"]
    assert got[p + "build.<locals>.converted"] and got[p + "_check"]
    assert got[p + "build.<locals>.Tab.method"]
    assert not got[p + "build.<locals>.denial_only"] and not got[p + "build.<locals>.reads"]
    assert got[p + "build"] is False  # defining a handler is not raising


def test_an_unwired_refusing_handler_is_named_and_a_wired_one_is_not():
    from vibestudio.studio.errors import wire

    module = importlib.import_module("vibestudio.studio.errors")

    def handler(x):  # type: ignore[no-untyped-def]
        raise module.refuse("Pick one.")

    handler.__module__ = "vibestudio.studio.pages.sample"
    handler.__qualname__ = "build.<locals>.direct"
    refusing = {"vibestudio.studio.pages.sample:build.<locals>.direct": True}
    with gr.Blocks() as demo:
        box, note = gr.Textbox(elem_id="sample-box"), gr.HTML(elem_id="sample-note")
        plain, wired = gr.Button(elem_id="sample-plain"), gr.Button(elem_id="sample-wired")
        plain.click(handler, [box], [note])
        wire(wired.click, handler, [box], [note], note)
    assert unwired_refusals(demo, refusing) == [
        "vibestudio.studio.pages.sample:build.<locals>.direct (sample-plain.click)"
    ]


def _fn_on(demo: gr.Blocks, elem_id: str, event: str):  # type: ignore[no-untyped-def]
    for block_fn in demo.fns.values():
        if any(
            getattr(demo.blocks.get(i), "elem_id", None) == elem_id and e == event
            for i, e in block_fn.targets
        ):
            return block_fn
    raise AssertionError(f"no handler on {elem_id}.{event}")


def test_the_converted_refusals_answer_beside_their_control(fresh_app):
    """A prompt set that does not exist, a self-play model the registry does not know, an eval run with no
    contestant: each reason in the status element, every other output left as it was."""
    request = gr.Request(username=None)
    draw = _fn_on(fresh_app, "arena-random", "click")
    prompt, drawn, status = draw.fn("no-such-set")
    assert prompt == gr.skip() and drawn == gr.skip() and "⚠️" in status, status
    model = _fn_on(fresh_app, "arena-self-play-model", "change")
    first, second, note = model.fn("no-such-model")
    assert first == gr.skip() and second == gr.skip() and "⚠️" in note, note
    evals = _fn_on(fresh_app, "evals-run", "click")
    said = evals.fn(None, "", request, gr.Progress())
    assert "⚠️" in said and "Pick a contestant" in said, said
