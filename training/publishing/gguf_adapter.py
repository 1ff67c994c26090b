"""A PEFT LoRA adapter written as a llama.cpp LoRA adapter in GGUF, applied at run time on the parent's file.

Re-quantizing a merged child throws its training away when the trained change is smaller than a
quantization step. A Q4_1 step is several times a DPO LoRA's change on SmolLM2. Applied at run time, the
adapter adds ``B @ A @ x`` beside the parent's own quantized matmul. That is the very computation the
child was trained with, since training saw the parent's dequantized weights plus the LoRA.

The file follows llama.cpp's adapter layout, the format its own ``convert_lora_to_gguf.py`` writes:
- ``general.type = adapter``, ``adapter.type = lora``, ``adapter.lora.alpha``;
- for each adapted weight, two tensors: ``<llama.cpp weight name>.lora_a`` (PEFT's ``lora_A``, r x in) and
  ``.lora_b`` (``lora_B``, out x r).
llama.cpp scales by alpha / r, as PEFT does. An rsLoRA adapter (alpha / sqrt(r)) is written with the alpha
that gives its scale. The q/k rows of ``lora_b`` get the same permutation as the merged conversion's q/k
weights. Some adapters llama.cpp cannot apply: DoRA, trained full modules beside the LoRA, biases, other
architectures. They raise ``ConversionError``, and the caller picks another form.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from vibestudio.common.filelocks import file_lock, unique_tmp
from vibestudio.training.publishing.gguf_export import ConversionError, _permute, load_check, read_header


def adapter_gguf_path(folder: Path, f16: bool = False) -> Path:
    """Where a LoRA checkpoint's GGUF adapter lives: beside the adapter it was written from."""
    return Path(folder) / f"adapter.{'f16' if f16 else 'f32'}.gguf"


def _adapter_config(folder: Path) -> dict[str, Any]:
    try:
        cfg = json.loads((folder / "adapter_config.json").read_text())
    except (OSError, ValueError) as exc:
        raise ConversionError(f"the adapter's config could not be read ({type(exc).__name__})") from exc
    if not isinstance(cfg, dict):
        raise ConversionError("the adapter's config is not a mapping")
    if cfg.get("use_dora"):
        raise ConversionError("a DoRA adapter cannot be applied by llama.cpp")
    if cfg.get("modules_to_save"):
        raise ConversionError("the adapter trains whole modules beside its LoRA (modules_to_save)")
    if str(cfg.get("bias", "none")) != "none":
        raise ConversionError("the adapter trains biases, which a llama.cpp LoRA adapter cannot carry")
    return cfg


def _adapter_tensors(folder: Path) -> dict[str, Any]:
    from safetensors.numpy import load_file

    path = folder / "adapter_model.safetensors"
    if not path.is_file():
        raise ConversionError("the adapter has no adapter_model.safetensors")
    try:
        return dict(load_file(str(path)))
    except Exception as exc:
        raise ConversionError(f"the adapter's weights could not be read ({type(exc).__name__})") from exc


def write_adapter_gguf(
    adapter_dir: Path, base_config: Any, template: Path, out: Path, f16: bool = False
) -> int:
    """Write the PEFT adapter in ``adapter_dir`` (for a model with HF config ``base_config``) as a llama.cpp
    LoRA adapter at ``out``; returns the number of adapted weights."""
    import gguf
    import numpy as np

    folder = Path(adapter_dir)
    cfg = _adapter_config(folder)
    if (
        getattr(base_config, "model_type", None) != "llama"
        or read_header(template).get("general.architecture") != "llama"
    ):
        raise ConversionError("only Llama-architecture adapters are written for llama.cpp")
    r = int(cfg.get("r") or 0)
    if r <= 0:
        raise ConversionError("the adapter's config has no rank r")
    alpha = float(cfg.get("lora_alpha") or r)
    if cfg.get("use_rslora"):
        alpha *= math.sqrt(r)  # rsLoRA scales by alpha / sqrt(r); llama.cpp by alpha / r
    if cfg.get("rank_pattern") or cfg.get("alpha_pattern"):
        raise ConversionError("per-module ranks or alphas (rank_pattern, alpha_pattern) are not supported")
    n_layers = int(base_config.num_hidden_layers)
    heads = int(base_config.num_attention_heads)
    kv = int(base_config.num_key_value_heads or heads)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, n_layers)
    pairs: dict[str, dict[str, Any]] = {}
    for key, value in _adapter_tensors(folder).items():
        for part in ("lora_A", "lora_B"):
            marker = f".{part}."
            if marker in key:
                hf = key.split(marker)[0].removeprefix("base_model.model.") + ".weight"
                pairs.setdefault(hf, {})[part] = value
                break
        else:
            raise ConversionError(
                f"unexpected tensor {key!r} in the adapter (only lora_A / lora_B are carried)"
            )
    if not pairs:
        raise ConversionError("the adapter has no LoRA weights")
    dtype = np.float16 if f16 else np.float32
    writer = gguf.GGUFWriter(str(out), arch="llama")
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    for hf, ab in sorted(pairs.items()):
        if set(ab) != {"lora_A", "lora_B"}:
            raise ConversionError(f"{hf}: the adapter has only {', '.join(ab)}")
        name = names.get_name(hf, try_suffixes=(".weight",))
        if name is None:
            raise ConversionError(f"no llama.cpp name for adapted weight {hf!r}")
        a = np.asarray(ab["lora_A"], dtype=np.float32)
        b = np.asarray(ab["lora_B"], dtype=np.float32)
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[1]:
            raise ConversionError(f"{hf}: lora_A {a.shape} and lora_B {b.shape} do not pair")
        if hf.endswith("q_proj.weight"):
            b = _permute(b, heads, heads)
        elif hf.endswith("k_proj.weight"):
            b = _permute(b, heads, kv)
        writer.add_tensor(f"{name}.lora_a", np.ascontiguousarray(a.astype(dtype)))
        writer.add_tensor(f"{name}.lora_b", np.ascontiguousarray(b.astype(dtype)))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return len(pairs)


def adapter_check(model: Path, adapter: Path) -> None:
    """Raise ConversionError unless llama.cpp loads ``model`` with ``adapter`` applied and answers a token."""
    load_check(model, adapter=adapter)


def convert_adapter(adapter_dir: Path, base_ref: str, template: Path, f16: bool = False) -> Path:
    """The adapter in ``adapter_dir`` as a load-checked llama.cpp adapter beside it (reused when a checked one
    is there); ``template`` is the parent's GGUF it is applied to. Only a whole, checked file gets the name."""
    from transformers import AutoConfig

    from vibestudio.arena.registry import resolve_model_ref

    target = adapter_gguf_path(adapter_dir, f16)
    with file_lock(target.with_name(target.name + ".lock")):
        if target.exists():
            try:
                adapter_check(template, target)
                return target
            except ConversionError:
                target.unlink()
        try:
            base_config = AutoConfig.from_pretrained(resolve_model_ref(base_ref))
        except Exception as exc:
            raise ConversionError(
                f"the base model's config could not be read ({type(exc).__name__})"
            ) from exc
        tmp = unique_tmp(target)
        try:
            write_adapter_gguf(Path(adapter_dir), base_config, template, tmp, f16)
            adapter_check(template, tmp)
            tmp.rename(target)
        except ConversionError:
            raise
        except Exception as exc:
            raise ConversionError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            tmp.unlink(missing_ok=True)
    return target
