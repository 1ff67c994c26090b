"""Fidelity: how much of a checkpoint's training survives in the form that plays, and which form plays.

The trained model is the parent's HF weights plus the child's LoRA (or its full checkpoint), in fp32 with
transformers. That is exactly what the optimizer changed. A *deployed form* is what the arena would run
instead:
- a GGUF of the merged weights at some quantization;
- the parent's own GGUF with the child's LoRA applied at run time (``training.publishing.gguf_adapter``);
- the transformers engine itself.
Re-quantizing can throw the training away: a SmolLM2 DPO LoRA changes weights by less than one Q4_1 step.
So no form is trusted by construction.

**How it is measured.** On held-out prompts the trained model writes a greedy continuation. Several models
score the same token sequence, position by position, over the whole vocabulary:
- the trained model and the parent;
- each form;
- the parent *as that form's world runs it*: its GGUF for llama.cpp forms, its HF weights for
  transformers.
``Δ_T = log T - log P`` is the trained shift. ``Δ_D = log D - log P_D`` is the shift as deployed, against
the parent as it plays. Each position is weighted by ``w = (T + P) / 2``:

    kept = Σ E_w[Δ_D · Δ_T] / Σ E_w[Δ_T²]

This is the projection of the deployed shift on the trained one. It is 1 when the form reproduces the
trained shift, 0 when it plays like its parent. Engine noise is independent of the trained shift.
(llama.cpp quantizes activations; the parent's GGUF is not bit-equal to its fp32 conversion either.) So
noise widens the interval without biasing the share. An R²-style share would count that noise as lost
training. Its 95% interval is SciPy's percentile bootstrap over prompts.

Beside it, in nats per token:
- KL(T‖P): how far training moved the model;
- KL(D‖P_D): how far the form moved from its parent;
- KL(T‖D): how far the form is from the trained model;
- KL(P‖P_D): what the engine costs the parent itself.

**A form passes** when its share reaches ``floor`` and KL(T‖D) is small enough. KL(T‖D) may be at most
``(1 - floor)`` times KL(T‖P), plus ``max_added_noise`` times KL(P‖P_D). So it carries the training. It
adds no more noise than the floor lets go, plus what its engine adds to the parent. That also bounds an
overshoot. A shift too small to measure (``min_shift``) says "can't tell", and the noise test alone
decides.

``choose`` measures the candidate forms fastest first (the rules file's ``fidelity.forms``). It returns
the first whose point estimate reaches ``fidelity.floor``. Files of forms that failed are removed, so
nothing below the floor is ever registered. The transformers engine is the trained computation itself and
always qualifies.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: Held-out everyday prompts: none is an MT-Bench question or a prompt the studio ships for training.
PROMPTS = (
    "How do I keep basil alive on a windowsill?",
    "What should I pack for a two-day hike?",
    "Explain what a mortgage is in two sentences.",
    "Why does bread go stale?",
    "Suggest a name for a grey kitten.",
    "How long should I boil an egg for a runny yolk?",
    "What is the difference between weather and climate?",
    "Give me a tip for remembering people's names.",
    "How do solar panels make electricity?",
    "What is a good first programming language, and why?",
    "Write one sentence inviting a neighbour to dinner.",
    "Why do cats purr?",
    "How can I make my phone battery last longer?",
    "What causes hiccups?",
    "Recommend a way to start running as a beginner.",
    "What does a librarian do all day?",
)

#: Candidate forms, fastest first; what each one is.
FORMS = {
    "parent_quant": "GGUF of the merged weights at the parent's quantization",
    "adapter": "the parent's GGUF with the LoRA applied at run time (llama.cpp adapter, F32)",
    "q8_0": "GGUF of the merged weights at Q8_0",
    "f16": "GGUF of the merged weights at F16",
    "transformers": "the trained weights on the transformers engine (fp32)",
}
_FTYPES = {"q8_0": 7, "f16": 1}


@dataclass
class Policy:
    """The rules file's ``fidelity`` section."""

    floor: float = 0.9
    forms: tuple[str, ...] = ("parent_quant", "adapter", "q8_0", "f16", "transformers")
    prompts: int = 12
    tokens: int = 24
    min_shift: float = 1e-3
    max_added_noise: float = 2.0
    seed: int = 0


@dataclass
class FormFidelity:
    """One deployed form, measured against the trained model and its parent."""

    form: str
    engine: str
    what: str
    model_path: str = ""
    adapter_path: str = ""
    size_bytes: int = 0
    kept: float | None = None  # share of the trained shift reproduced; None: can't tell (see note)
    kept_interval: tuple[float, float] | None = None
    kl_trained_parent: float | None = None  # nats per token
    kl_deployed_parent: float | None = None
    kl_trained_deployed: float | None = None
    kl_parent_engine: float | None = (
        None  # KL(parent‖parent as this form's engine runs it): the engine's own cost
    )
    noise_ok: bool = (
        True  # KL(trained‖form) within (1 - floor) KL(trained‖parent) + max_added_noise x the engine's cost
    )
    n_prompts: int = 0
    n_tokens: int = 0
    passed: bool = False
    note: str = ""
    seconds: float = 0.0


@dataclass
class Fidelity:
    """The forms measured for one checkpoint, the one chosen and why."""

    chosen: str
    why: str
    floor: float
    forms: list[FormFidelity] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def chosen_form(self) -> FormFidelity | None:
        return next((f for f in self.forms if f.form == self.chosen), None)


def summary(record: dict[str, Any] | None) -> str:
    """One line for a page: the chosen form, its kept share with interval and n (from the stored record)."""
    if not record:
        return "fidelity not measured (published before fidelity was measured)"
    chosen = next((f for f in record.get("forms", []) if f.get("form") == record.get("chosen")), None)
    if chosen is None:
        return f"plays as {record.get('chosen')}: {record.get('why', '')}"
    return f"plays as {chosen['what']}: {describe(chosen)}"


def describe(f: dict[str, Any]) -> str:
    """``kept 98% [96%, 99%] of the trained shift (12 prompts, 288 tokens)``, or why it can't tell."""
    n = f"{f.get('n_prompts', 0)} prompts, {f.get('n_tokens', 0)} tokens"
    if f.get("kept") is None:
        return f"can't tell: {f.get('note') or 'not measured'} ({n})"
    ci = f.get("kept_interval")
    interval = f" [{ci[0]:.0%}, {ci[1]:.0%}]" if ci else ""
    noise = f"; {f['note']}" if f.get("note") else ""
    return f"kept {f['kept']:.0%}{interval} of the trained shift ({n}){noise}"


# ---- the reference: trained and parent log-probabilities on the trained model's own continuations ---------
@dataclass
class Reference:
    ids: list[list[int]]  # prompt + continuation, per prompt
    starts: list[int]  # index of the first scored prediction (the last prompt token)
    trained: list[Any]  # log-probs (positions x vocab), float32
    parent: list[Any]
    parent_gguf: dict[str, list[Any]] = field(default_factory=dict)  # per parent file: its log-probs

    @property
    def n_tokens(self) -> int:
        return sum(len(x) - s - 1 for x, s in zip(self.ids, self.starts, strict=True))


def _log_softmax(x: Any) -> Any:
    import numpy as np

    x = np.asarray(x, dtype=np.float64)
    m = x.max(axis=-1, keepdims=True)
    return (x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))).astype(np.float32)


def reference(
    model_ref: str, adapter_ref: str | None, parent_ref: str, policy: Policy, prompts: list[str] | None = None
) -> Reference:
    """Greedy continuations of the trained model and the trained and parent log-probs along them."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from vibestudio.arena.registry import resolve_model_ref

    torch.manual_seed(policy.seed)
    base = resolve_model_ref(model_ref)
    tok = AutoTokenizer.from_pretrained(base)
    trained: Any = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    parent: Any = None
    if adapter_ref:
        from peft import PeftModel

        trained = PeftModel.from_pretrained(trained, adapter_ref)
    else:
        parent = AutoModelForCausalLM.from_pretrained(resolve_model_ref(parent_ref), dtype=torch.float32)
        parent.eval()
    trained.eval()
    out = Reference([], [], [], [])
    asked = list(prompts or PROMPTS)[: max(2, policy.prompts)]
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    stops = {tok.eos_token_id, *_ids(getattr(trained.generation_config, "eos_token_id", None))} - {None}
    prompt_ids = [_chat_ids(tok, p) for p in asked]
    with torch.inference_mode():
        # all prompts at once, left-padded: one decode step per token for the whole set (one prompt at a time
        # took minutes beside other work on two cores)
        width = max(map(len, prompt_ids))
        x = torch.tensor([[pad] * (width - len(ids)) + ids for ids in prompt_ids])
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in prompt_ids])
        gen = trained.generate(
            input_ids=x, attention_mask=mask, max_new_tokens=policy.tokens, do_sample=False, pad_token_id=pad
        )
        seqs = []
        for ids, row in zip(prompt_ids, gen[:, width:].tolist(), strict=True):
            cont: list[int] = []
            for t in row:
                cont.append(t)
                if t in stops:
                    break
            if cont:
                seqs.append((ids, cont))
        if len(seqs) < 2:
            raise RuntimeError("the trained model answered fewer than two prompts with any token")
        # scored right-padded from position 0: each sequence's logits are its own (causal attention, pads last)
        longest = max(len(i) + len(c) for i, c in seqs)
        batch = torch.tensor([i + c + [pad] * (longest - len(i) - len(c)) for i, c in seqs])
        bmask = torch.tensor([[1] * (len(i) + len(c)) + [0] * (longest - len(i) - len(c)) for i, c in seqs])
        t_all = trained(input_ids=batch, attention_mask=bmask).logits
        if adapter_ref:
            with trained.disable_adapter():
                p_all = trained(input_ids=batch, attention_mask=bmask).logits
        else:
            p_all = parent(input_ids=batch, attention_mask=bmask).logits
        for k, (ids, cont) in enumerate(seqs):
            full = ids + cont
            start = len(ids) - 1
            out.ids.append(full)
            out.starts.append(start)
            out.trained.append(_log_softmax(t_all[k, start : len(full) - 1].float().numpy()))
            out.parent.append(_log_softmax(p_all[k, start : len(full) - 1].float().numpy()))
    return out


def _ids(value: Any) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, list | tuple) else [int(value)]


def _chat_ids(tok: Any, prompt: str) -> list[int]:
    text = tok.apply_chat_template(
        [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
    )
    return list(tok(text, add_special_tokens=False)["input_ids"])


def gguf_logprobs(ref: Reference, model_path: str, adapter_path: str | None = None) -> list[Any]:
    """llama.cpp's log-probs (positions x vocab) for the reference's token sequences (the same ids, no
    re-tokenizing)."""
    import numpy as np
    from llama_cpp import Llama

    n_ctx = max(len(x) for x in ref.ids) + 8
    llm = Llama(
        model_path=model_path,
        lora_path=adapter_path,
        n_ctx=n_ctx,
        n_batch=n_ctx,
        logits_all=True,
        n_threads=max(1, os.cpu_count() or 1),
        verbose=False,
    )
    try:
        out = []
        for ids, start in zip(ref.ids, ref.starts, strict=True):
            llm.reset()
            llm.eval(ids)
            out.append(_log_softmax(np.array(llm.scores[start : len(ids) - 1])))
        return out
    finally:
        llm.close()


def parent_gguf_logprobs(ref: Reference, parent_path: str) -> list[Any]:
    if parent_path not in ref.parent_gguf:
        ref.parent_gguf[parent_path] = gguf_logprobs(ref, parent_path)
    return ref.parent_gguf[parent_path]


def _kl(p_log: Any, q_log: Any) -> Any:
    """KL(p‖q) per position (nats)."""
    import numpy as np

    return (np.exp(p_log.astype(np.float64)) * (p_log.astype(np.float64) - q_log)).sum(axis=-1)


def score(
    ref: Reference, deployed: list[Any], parent_deployed: list[Any], policy: Policy, form: FormFidelity
) -> FormFidelity:
    """Fill ``form`` with kept (and its interval), the KLs and whether it passes the floor."""
    import numpy as np
    from scipy.stats import bootstrap

    num, den, kl_tp, kl_dp, kl_td, kl_pp, n = [], [], 0.0, 0.0, 0.0, 0.0, 0
    for t, p, d, pd in zip(ref.trained, ref.parent, deployed, parent_deployed, strict=True):
        t64, p64 = t.astype(np.float64), p.astype(np.float64)
        w = (np.exp(t64) + np.exp(p64)) / 2
        shift = t64 - p64
        dshift = d.astype(np.float64) - pd.astype(np.float64)
        num.append(float((w * dshift * shift).sum()))
        den.append(float((w * shift**2).sum()))
        kl_tp += float(_kl(t, p).sum())
        kl_dp += float(_kl(d, pd).sum())
        kl_td += float(_kl(t, d).sum())
        kl_pp += float(_kl(p, pd).sum())
        n += len(t)
    a, b = np.array(num), np.array(den)
    form.n_prompts, form.n_tokens = len(a), n
    form.kl_trained_parent, form.kl_deployed_parent, form.kl_trained_deployed = (
        kl_tp / n,
        kl_dp / n,
        kl_td / n,
    )
    form.kl_parent_engine = kl_pp / n
    # the form may differ from the trained model by what its engine costs the parent (times the allowance) plus
    # the share of the training the floor lets go: a far-moved child meets more engine noise than its parent
    allowed = (1 - policy.floor) * form.kl_trained_parent + policy.max_added_noise * form.kl_parent_engine
    noise_ok = form.kl_trained_deployed <= allowed + 1e-6
    form.noise_ok = noise_ok
    shift_per_token = b.sum() / n
    if shift_per_token < policy.min_shift:
        form.kept = None
        form.note = (
            f"training moved the model too little to measure ({shift_per_token:.2g} < {policy.min_shift:g} "
            "squared log-prob shift per token)"
        )
        form.passed = noise_ok
        return form
    form.kept = float(a.sum() / b.sum())
    if len(a) >= 2:
        res = bootstrap(
            (a, b),
            lambda x, y: x.sum() / y.sum(),
            paired=True,
            vectorized=False,
            n_resamples=999,
            method="percentile",
            random_state=policy.seed,
        )
        form.kept_interval = (float(res.confidence_interval.low), float(res.confidence_interval.high))
    form.passed = form.kept >= policy.floor and noise_ok
    if not noise_ok:
        form.note = (
            f"adds noise of its own: KL(trained‖form) {form.kl_trained_deployed:.4f} is more than "
            f"{1 - policy.floor:.0%} of KL(trained‖parent) {form.kl_trained_parent:.4f} plus "
            f"{policy.max_added_noise:g}x the engine's own {form.kl_parent_engine:.4f} on the parent"
        )
    return form


# ---- choosing the form that plays ------------------------------------------------------------------------------
@dataclass
class Choice:
    """The form that plays: engine and files for its contestant row, the fidelity record, a sentence for its page."""

    engine: str
    model_ref: str | None  # None: the transformers engine's own refs (base + adapter, or the folder)
    adapter_ref: str | None
    fidelity: Fidelity
    note: str


def _size(*paths: str) -> int:
    return sum(os.path.getsize(p) for p in paths if p and os.path.exists(p))


def choose(
    parent_model_ref: str,
    base_ref: str,
    adapter: str | None,
    folder: Path,
    policy: Policy | None = None,
    say: Any = lambda msg: print(f"[fidelity] {msg}", flush=True),
) -> Choice:
    """The fastest form of a child of a llama.cpp parent (GGUF ``parent_model_ref``) that keeps its training.

    ``base_ref`` is the HF weights the child was trained from (for a LoRA child, with ``adapter`` its folder; for
    a full fine-tune, ``folder`` holds the child and ``base_ref`` is the parent's HF weights). Never raises: a
    measurement that fails leaves the child on the transformers engine, which is the trained computation."""
    from vibestudio.arena.registry import resolve_model_ref
    from vibestudio.training.publishing.gguf_adapter import convert_adapter
    from vibestudio.training.publishing.gguf_export import (
        ConversionError,
        child_gguf_path,
        convert,
        file_type_name,
        file_type_of,
    )

    policy = policy or Policy()
    t0 = time.perf_counter()
    record = Fidelity(chosen="transformers", why="", floor=policy.floor)
    exact = FormFidelity("transformers", "transformers", FORMS["transformers"], passed=True)
    template = Path(resolve_model_ref(parent_model_ref))
    try:
        if not template.is_file():
            raise ConversionError(f"the parent's GGUF file is missing ({template.name})")
        parent_ftype = file_type_of(template)
        model_ref, adapter_ref = (base_ref, adapter) if adapter else (str(folder), None)
        ref = reference(model_ref, adapter_ref, base_ref, policy)
        parent_d = parent_gguf_logprobs(ref, str(template))
    except Exception as exc:
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        exact.note = f"the other forms could not be measured ({reason})"
        record.forms.append(exact)
        record.why = f"plays on the transformers engine: {exact.note}"
        record.seconds = time.perf_counter() - t0
        return Choice("transformers", None, None, record, f"Plays on the transformers engine: {exact.note}.")
    seen_ftypes: set[int] = set()
    for name in policy.forms:
        t1 = time.perf_counter()
        if name == "transformers":
            form = score(ref, ref.trained, ref.parent, policy, exact)
            form.passed, form.seconds = True, time.perf_counter() - t1
            record.forms.append(form)
            break
        if name == "adapter" and not adapter:
            continue
        ftype = parent_ftype if name == "parent_quant" else _FTYPES.get(name)
        if name != "adapter":
            if ftype is None or ftype in seen_ftypes:
                continue
            seen_ftypes.add(ftype)
        what = FORMS[name] + (f" ({file_type_name(parent_ftype)})" if name == "parent_quant" else "")
        form = FormFidelity(name, "llama_cpp", what)
        made: list[Path] = []
        try:
            if name == "adapter":
                assert adapter is not None
                path = convert_adapter(Path(adapter), base_ref, template)
                made.append(path)
                form.model_path, form.adapter_path = str(template), str(path)
                deployed = gguf_logprobs(ref, str(template), str(path))
            else:
                assert ftype is not None
                done = convert(model_ref, adapter_ref, template, child_gguf_path(folder, ftype), ftype=ftype)
                made.append(done.path)
                form.model_path = str(done.path)
                deployed = gguf_logprobs(ref, str(done.path))
            form.size_bytes = (
                _size(form.model_path, form.adapter_path) if name != "adapter" else _size(form.adapter_path)
            )
            score(ref, deployed, parent_d, policy, form)
        except Exception as exc:
            form.passed = False
            form.note = "could not be made: " + " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        form.seconds = time.perf_counter() - t1
        record.forms.append(form)
        say(f"{name}: {describe(asdict(form))} -> {'kept' if form.passed else 'below the floor'}")
        if form.passed:
            break
        for p in made:  # never registered, never left behind
            p.unlink(missing_ok=True)
    chosen = next(f for f in record.forms if f.passed) if any(f.passed for f in record.forms) else None
    if chosen is None:  # the rules listed no transformers form and every listed form failed
        exact = score(ref, ref.trained, ref.parent, policy, exact)
        exact.passed = True
        record.forms.append(exact)
        chosen = exact
    record.chosen = chosen.form
    faster = [f for f in record.forms if f is not chosen]
    below = "; ".join(f"{f.form} {describe(asdict(f))}" for f in faster)
    record.why = (
        f"the fastest form at or above the floor ({policy.floor:.0%} of the trained shift kept): "
        f"{describe(asdict(chosen))}" + (f"; faster forms fell below it: {below}" if below else "")
    )
    record.seconds = time.perf_counter() - t0
    if chosen.engine == "transformers":
        return Choice("transformers", None, None, record, f"Plays on the transformers engine: {record.why}.")
    model = chosen.model_path
    if chosen.form == "adapter":
        model = parent_model_ref  # the parent's own reference (a builtin stays symbolic)
    note = f"Plays on llama.cpp as {chosen.what}: {record.why}."
    return Choice("llama_cpp", model, chosen.adapter_path or None, record, note)


# ---- what the report, the gate and the pages read ----------------------------------------------------------------
def record_for(db: Any, contestant_id: int) -> tuple[bool, dict[str, Any] | None, str]:
    """(is a published checkpoint, its fidelity record or None, its engine) for a contestant."""
    from sqlalchemy import select

    from vibestudio.db.models import Checkpoint, Contestant

    with db.session() as s:
        row = s.get(Contestant, contestant_id)
        ckpt = s.scalar(
            select(Checkpoint)
            .where(Checkpoint.contestant_id == contestant_id)
            .order_by(Checkpoint.id)
            .limit(1)
        )
        engine = row.engine if row is not None else ""
        return ckpt is not None, (dict(ckpt.fidelity) if ckpt is not None and ckpt.fidelity else None), engine


def not_as_trained(db: Any, contestant_id: int) -> str | None:
    """Why the model that would play is not the model that was trained, or None when it is (or is no child)."""
    return problem(*record_for(db, contestant_id))


def problem(is_child: bool, record: dict[str, Any] | None, engine: str) -> str | None:
    """``not_as_trained`` from what ``record_for`` read. A checkpoint on llama.cpp needs a fidelity record whose
    chosen form passed its floor: one published before fidelity was measured played a re-quantized file that
    may have lost its training."""
    if not is_child or engine != "llama_cpp":
        return None
    if record is None:
        return (
            "the model that would play is not the model that was trained: this GGUF was published before "
            "fidelity was measured, and re-quantizing can throw the training away (publish it again)"
        )
    chosen = next((f for f in record.get("forms", []) if f.get("form") == record.get("chosen")), None)
    if chosen is None or not chosen.get("passed"):
        return (
            "the model that would play is not the model that was trained: "
            + (describe(chosen) if chosen else "no measured form")
            + f", below the floor of {float(record.get('floor', 0)):.0%}"
        )
    return None
