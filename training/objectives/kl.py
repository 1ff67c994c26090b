"""KL(policy || reference) measured the honest way, on answers sampled from the policy on held-out prompts.

It averages log pi(y|x) - log pi_ref(y|x) over the sampled answers: a Monte-Carlo estimate of the
sequence-level KL. TRL's DPO logs only the implicit rewards: beta * log-ratios on the *training* pairs.
They say nothing about how far the policy drifts on prompts it was not trained on.

Held-out prompts are MT-Bench first turns that do not appear in the snapshot. Sampling uses temperature 1
and no top-p, so the samples come from pi itself; any truncation would bias the estimate. The reference is
what the trainer uses:
- new LoRA: the base with the adapter disabled;
- continued LoRA: TRL's frozen "ref" adapter;
- full fine-tune: ``trainer.ref_model``.
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from typing import Any

from vibestudio.arena.prompts import mt_bench_first_turns


def held_out_prompts(n: int, exclude: list[dict[str, Any]] | None = None, seed: int = 0) -> list[str]:
    """``n`` MT-Bench first turns not used as a prompt in ``exclude`` (snapshot rows), in a seeded order."""
    used = set()
    for row in exclude or []:
        for msg in row.get("prompt", []):
            if msg.get("role") == "user":
                used.add(msg["content"].strip())
    prompts = [p for p in mt_bench_first_turns() if p not in used]
    random.Random(seed).shuffle(prompts)
    return prompts[:n]


@contextmanager
def _reference(trainer: Any, model: Any):  # type: ignore[no-untyped-def]
    """Yield a callable model that computes reference log-probs the way the trainer does."""
    from peft import PeftModel

    if getattr(trainer, "ref_model", None) is not None:
        yield trainer.ref_model
    elif isinstance(model, PeftModel):
        from trl.trainer.utils import use_adapter

        with use_adapter(model, "ref" if "ref" in model.peft_config else None):
            yield model
    else:
        raise RuntimeError("no reference model to measure KL against")


def encode_chat_prompts(tok: Any, prompts: list[str], device: Any) -> dict[str, Any]:
    """Single-turn user prompts through the chat template, left-padded into one batch on ``device`` (the
    tokenizer's own padding side is restored afterwards)."""
    texts = [
        tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False)
        for p in prompts
    ]
    side = tok.padding_side
    tok.padding_side = "left"
    try:
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    finally:
        tok.padding_side = side
    return {k: v.to(device) for k, v in enc.items()}


def sequence_logps(model: Any, ids: Any, attention: Any, start: int, completion_mask: Any) -> Any:
    """Sum of log-probs of the completion tokens (positions >= ``start``) per row."""
    import torch

    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=attention, position_ids=positions).logits[:, start - 1 : -1]
    logps = torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[:, start:].unsqueeze(-1)).squeeze(-1)
    return (logps * completion_mask).sum(-1)


class KLCheck:
    """Measures KL on a fixed set of held-out prompts and writes ``kl`` and ``kl_per_token`` metrics."""

    def __init__(
        self, prompts: list[str], tokenizer: Any, metrics: Any, max_new_tokens: int = 32, seed: int = 0
    ) -> None:
        self.prompts, self.tok, self.metrics = prompts, tokenizer, metrics
        self.max_new_tokens, self.seed = max_new_tokens, seed

    @classmethod
    def for_job(cls, ctx: Any, tokenizer: Any, exclude: list[dict[str, Any]]) -> KLCheck:
        cfg = ctx.cfg
        prompts = held_out_prompts(cfg.kl_prompts, exclude, cfg.seed)
        return cls(prompts, tokenizer, ctx.metrics, cfg.kl_max_new_tokens, cfg.seed)

    def measure(self, trainer: Any, step: int) -> dict[str, float]:
        if not self.prompts:
            return {}
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()
        try:
            values = self._measure(trainer, model)
        finally:
            model.train(was_training)
        self.metrics.log(step, values)
        print(f"[kl] step {step}: kl={values['kl']:.4g} per token={values['kl_per_token']:.4g}", flush=True)
        return values

    def _measure(self, trainer: Any, model: Any) -> dict[str, float]:
        import torch

        tok = self.tok
        enc = encode_chat_prompts(tok, self.prompts, next(model.parameters()).device)
        start = enc["input_ids"].shape[1]
        with torch.no_grad():
            torch.manual_seed(self.seed)
            out = model.generate(
                **enc,
                do_sample=True,
                temperature=1.0,
                top_p=1.0,
                top_k=0,
                max_new_tokens=self.max_new_tokens,
                pad_token_id=tok.pad_token_id,
            )
            completion = out[:, start:]
            eos = tok.eos_token_id
            # keep tokens up to and including the first EOS
            is_eos = (completion == eos).int()
            after = (is_eos.cumsum(-1) - is_eos) > 0
            mask = (~after).float()
            attention = torch.cat([enc["attention_mask"], mask.long()], dim=1)
            pol = sequence_logps(model, out, attention, start, mask)
            with _reference(trainer, model) as ref_model:
                ref = sequence_logps(ref_model, out, attention, start, mask)
        diff = pol - ref
        tokens = float(mask.sum().clamp(min=1))
        n = len(self.prompts)
        return {
            "kl": float(diff.mean()),
            # the spread over prompts: each prompt's sampled answer is one draw of log pi - log pi_ref
            "kl_se": float(diff.std(unbiased=True)) / n**0.5 if n > 1 else float("nan"),
            "kl_per_token": float(diff.sum()) / tokens,
            "kl_sample_tokens": tokens / len(self.prompts),
        }
