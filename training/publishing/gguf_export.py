"""A checkpoint's merged weights written as a GGUF that llama.cpp loads, at any file type.

A checkpoint trained from a GGUF parent can be written back as GGUF. The parent is the embedded SmolLM2
Q4_1, or any llama.cpp contestant whose HF weights were trained. It can be written at the parent's
quantization, Q8_0 or F16. These are candidate forms that ``training.publishing.fidelity`` measures before
one plays, since re-quantizing can lose a small trained change. The child has its parent's architecture
and tokenizer, so the parent's GGUF is the template:

1. The child's weights are loaded with transformers and its LoRA merged with peft. A full fine-tune is
   read as is.
2. Its tensors get llama.cpp's names (``gguf``'s tensor map). They get the q/k row permutation that
   llama.cpp's HF conversion applies to Llama attention. Transformers undoes it when it reads a GGUF, so
   training saw HF order.
3. They are written as F16 (1-D norms as F32) with every metadata key of the template: tokenizer, chat
   template, special ids. The architecture numbers are the exception; they come from the child's own
   config.
4. ``llama_cpp.llama_model_quantize`` brings them to the template's file type. F16/F32 templates skip
   this. The token embedding and output tensors keep the template's types.
5. llama.cpp load-checks the result: it loads, its vocabulary is the tokenizer's, it answers a token. Only
   then is it renamed onto its final name, atomically. So a partial or corrupt file is never at that name.

Only Llama-architecture checkpoints convert (SmolLM2 is one). Anything else raises ``ConversionError``
with the reason: another architecture, a tokenizer that is not the template's, or a failing step. The
caller then tries another form (``training.publishing.fidelity``, which says why on the child's page).
Whether a converted file keeps what was trained is ``training.publishing.fidelity``'s question. Exports
for deployment are ``training.publishing.model_export``. This module knows nothing about the database.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vibestudio.common.filelocks import file_lock, unique_tmp

#: The architecture numbers written from the child's own config (everything else comes from the template).
_ARCH_KEYS = (
    "context_length",
    "embedding_length",
    "block_count",
    "feed_forward_length",
    "rope.dimension_count",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.layer_norm_rms_epsilon",
    "rope.freq_base",
    "vocab_size",
)


class ConversionError(RuntimeError):
    """A checkpoint could not be written as a GGUF that llama.cpp loads; the message says which step and why."""


@dataclass
class Converted:
    """A child's GGUF on its final name: its file type, tensor types that differ from the template's, seconds."""

    path: Path
    file_type: str
    seconds: float
    reused: bool = False


# ---- reading the template and the child ---------------------------------------------------------------------
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}


@dataclass(frozen=True)
class Header:
    """A GGUF file's metadata (key -> (value type, value, array item type)) and its tensors' types."""

    fields: dict[str, tuple[int, Any, int | None]]
    tensor_types: dict[str, int]

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields[key][1] if key in self.fields else default


def read_header(path: Path) -> Header:
    """The metadata and tensor types of a GGUF file, cached per file version. Read here rather than with
    ``gguf.GGUFReader``, which builds a memory-mapped view per array element: 46 s for the SmolLM2 file's
    98,000 tokenizer strings on a loaded 2-core machine, against well under a second here."""
    st = Path(path).stat()
    return _read_header(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _read_header(path: str, _mtime: int, _size: int) -> Header:
    import mmap
    import struct

    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _parse(data)
    except ConversionError:
        raise
    except (struct.error, KeyError, ValueError, IndexError, OSError) as exc:
        raise ConversionError(
            f"{Path(path).name} is not a readable GGUF file ({type(exc).__name__})"
        ) from exc


def _parse(data: Any) -> Header:
    """The header of a mapped GGUF file (the tensors' data is never touched)."""
    import struct

    import numpy as np

    if data[:4] != b"GGUF":
        raise ConversionError("not a GGUF file")
    pos = 4
    version, n_tensors, n_kv = struct.unpack_from("<IQQ", data, pos)
    pos += 20
    if version < 2:
        raise ConversionError(f"GGUF version {version} is too old")

    def string() -> str:
        nonlocal pos
        (n,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        out = data[pos : pos + n].decode("utf-8", "replace")
        pos += n
        return out

    def value(vtype: int) -> Any:
        nonlocal pos
        if vtype == 8:
            return string()
        fmt = _SCALARS[vtype]
        (v,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return v

    fields: dict[str, tuple[int, Any, int | None]] = {}
    for _ in range(n_kv):
        key = string()
        (vtype,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if vtype != 9:
            fields[key] = (vtype, value(vtype), None)
            continue
        sub, count = struct.unpack_from("<IQ", data, pos)
        pos += 12
        if sub in _SCALARS and sub != 7:
            dt = np.dtype(_SCALARS[sub])
            items: list[Any] = np.frombuffer(data, dt, count, pos).tolist()
            pos += dt.itemsize * count
        else:
            items = [value(sub) for _ in range(count)]
        fields[key] = (vtype, items, sub)
    types = {}
    for _ in range(n_tensors):
        name = string()
        (n_dims,) = struct.unpack_from("<I", data, pos)
        pos += 4 + 8 * n_dims
        (ttype,) = struct.unpack_from("<I", data, pos)
        pos += 4 + 8  # type, then the data offset
        types[name] = ttype
    return Header(fields, types)


def file_type_of(template: Path) -> int:
    """The template's ``general.file_type`` (llama.cpp's ftype: 0 F32, 1 F16, 3 Q4_1...)."""
    ftype = read_header(template).get("general.file_type")
    if ftype is None:
        raise ConversionError(f"the template {Path(template).name} has no general.file_type")
    return int(ftype)


def file_type_name(ftype: int) -> str:
    import gguf

    try:
        return gguf.LlamaFileType(ftype).name.removeprefix("MOSTLY_").removeprefix("ALL_")
    except ValueError:
        return f"ftype {ftype}"


def load_merged(model_ref: str, adapter_ref: str | None = None) -> tuple[Any, Any]:
    """(tokenizer, fp32 model) of a checkpoint, with its LoRA adapter merged in when one is given."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from vibestudio.arena.registry import resolve_model_ref

    path = resolve_model_ref(model_ref)
    try:
        tok = AutoTokenizer.from_pretrained(path)
        model: Any = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        if adapter_ref:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, adapter_ref).merge_and_unload()
    except Exception as exc:
        raise ConversionError(f"could not load the checkpoint ({type(exc).__name__}: {exc})") from exc
    model.eval()
    return tok, model


def _permute(w: Any, n_head: int, n_head_kv: int | None = None) -> Any:
    """llama.cpp's row order for Llama q/k projections (its HF conversion's ``permute``)."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _arch_values(cfg: Any) -> dict[str, tuple[Any, str]]:
    heads = int(cfg.num_attention_heads)
    head_dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // heads)
    theta = getattr(cfg, "rope_theta", None)
    if theta is None:  # newer configs keep it under rope_parameters
        theta = (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
    return {
        "context_length": (int(cfg.max_position_embeddings), "UINT32"),
        "embedding_length": (int(cfg.hidden_size), "UINT32"),
        "block_count": (int(cfg.num_hidden_layers), "UINT32"),
        "feed_forward_length": (int(cfg.intermediate_size), "UINT32"),
        "rope.dimension_count": (head_dim, "UINT32"),
        "attention.head_count": (heads, "UINT32"),
        "attention.head_count_kv": (int(cfg.num_key_value_heads or heads), "UINT32"),
        "attention.layer_norm_rms_epsilon": (float(cfg.rms_norm_eps), "FLOAT32"),
        "rope.freq_base": (float(theta), "FLOAT32"),
        "vocab_size": (int(cfg.vocab_size), "UINT32"),
    }


def _check_convertible(cfg: Any, tok: Any, header: Header) -> None:
    """Raise ConversionError unless the child is a plain Llama whose tokenizer is the template's."""
    if header.get("general.architecture") != "llama":
        raise ConversionError("the template GGUF is not a Llama-architecture model")
    if getattr(cfg, "model_type", None) != "llama":
        raise ConversionError(f"only Llama-architecture checkpoints convert (this one is {cfg.model_type!r})")
    scaling = getattr(cfg, "rope_scaling", None)
    if scaling and (scaling.get("rope_type") or scaling.get("type")) not in (None, "default"):
        raise ConversionError(f"RoPE scaling {scaling!r} is not supported by this conversion")
    if getattr(cfg, "attention_bias", False) or getattr(cfg, "mlp_bias", False):
        raise ConversionError("attention or MLP biases are not supported by this conversion")
    tokens = header.get("tokenizer.ggml.tokens") or []
    ours = tok.convert_ids_to_tokens(list(range(len(tok))))
    if len(tokens) != int(cfg.vocab_size) or ours != tokens[: len(ours)]:
        raise ConversionError(
            f"the checkpoint's tokenizer ({len(ours)} tokens, vocab {cfg.vocab_size}) is not the template's "
            f"({len(tokens)} tokens)"
        )


def _tensors(model: Any, cfg: Any, f32: bool = False) -> list[tuple[str, Any]]:
    """(llama.cpp name, numpy array) for every weight: 2-D as float16 (float32 with ``f32``), 1-D as float32,
    q/k permuted."""
    import gguf
    import numpy as np

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, int(cfg.num_hidden_layers))
    heads, kv = int(cfg.num_attention_heads), int(cfg.num_key_value_heads or cfg.num_attention_heads)
    tied = bool(getattr(cfg, "tie_word_embeddings", False))
    out = []
    for hf_name, t in model.state_dict().items():
        if hf_name.endswith("rotary_emb.inv_freq") or (tied and hf_name == "lm_head.weight"):
            continue
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise ConversionError(f"no llama.cpp name for tensor {hf_name!r}")
        data = t.detach().to("cpu").float().numpy()
        if hf_name.endswith("q_proj.weight"):
            data = _permute(data, heads, heads)
        elif hf_name.endswith("k_proj.weight"):
            data = _permute(data, heads, kv)
        wide = f32 or data.ndim < 2
        out.append((name, np.ascontiguousarray(data.astype(np.float32 if wide else np.float16))))
    return out


def write_gguf(model: Any, tok: Any, template: Path, out: Path, f32: bool = False) -> None:
    """Write ``model`` as an F16 (``f32``: F32) GGUF at ``out`` with ``template``'s metadata (tokenizer, chat
    template, special ids) and the architecture numbers of its own config."""
    import gguf

    header = read_header(template)
    cfg = model.config
    _check_convertible(cfg, tok, header)
    arch_values = _arch_values(cfg)
    writer = gguf.GGUFWriter(str(out), arch="llama")
    if header.get(gguf.Keys.General.ALIGNMENT) is not None:
        writer.data_alignment = int(header.get(gguf.Keys.General.ALIGNMENT))
    skip = {gguf.Keys.General.ARCHITECTURE, gguf.Keys.General.FILE_TYPE}
    skip |= {f"llama.{k}" for k in _ARCH_KEYS}
    for key, (vtype, value, sub) in header.fields.items():
        if key in skip:
            continue
        kind = gguf.GGUFValueType(vtype)
        writer.add_key_value(key, value, kind, sub_type=gguf.GGUFValueType(sub) if sub is not None else None)
    for arch_key, (arch_value, arch_type) in arch_values.items():
        writer.add_key_value(f"llama.{arch_key}", arch_value, gguf.GGUFValueType[str(arch_type)])
    writer.add_file_type(int(gguf.LlamaFileType.ALL_F32 if f32 else gguf.LlamaFileType.MOSTLY_F16))
    for name, data in _tensors(model, cfg, f32):
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def quantize(src: Path, dst: Path, ftype: int, like: Path | None = None) -> None:
    """``src`` (F16/F32) quantized to llama.cpp file type ``ftype`` at ``dst``; with ``like``, its token
    embedding and output tensors get the types they have there."""
    import ctypes

    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = max(1, os.cpu_count() or 1)
    if like is not None:
        types = read_header(like).tensor_types
        if "token_embd.weight" in types:
            params.token_embedding_type = types["token_embd.weight"]
        if "output.weight" in types:
            params.output_tensor_type = types["output.weight"]
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
    if rc != 0 or not dst.exists():
        raise ConversionError(f"llama.cpp could not quantize to {file_type_name(ftype)} (code {rc})")


def load_check(path: Path, n_vocab: int | None = None, adapter: Path | None = None) -> None:
    """Raise ConversionError unless llama.cpp loads ``path`` (with the LoRA ``adapter`` applied, when given), has
    ``n_vocab`` tokens and answers one token."""
    what = "apply the adapter" if adapter is not None else "load the converted file"
    try:
        # not a GGUF at all: said before llama.cpp maps it (which checks every tensor's size)
        read_header(adapter if adapter is not None else path)
        from llama_cpp import Llama

        llm = Llama(
            model_path=str(path),
            lora_path=str(adapter) if adapter is not None else None,
            n_ctx=64,
            n_threads=1,
            verbose=False,
        )
        try:
            if n_vocab is not None and llm.n_vocab() != n_vocab:
                raise ConversionError(f"the GGUF has {llm.n_vocab()} tokens, the checkpoint {n_vocab}")
            llm.create_completion("Hello", max_tokens=1, temperature=0.0)
        finally:
            llm.close()
    except ConversionError:
        raise
    except Exception as exc:
        raise ConversionError(f"llama.cpp could not {what}: {type(exc).__name__}: {exc}") from exc


def convert(
    model_ref: str, adapter_ref: str | None, template: Path, target: Path, ftype: int | None = None
) -> Converted:
    """The checkpoint (``model_ref`` + optional LoRA ``adapter_ref``) as a load-checked GGUF at ``target``, at
    ``ftype`` (default: the template's). A load-checked file already at ``target`` is reused; one that fails the
    check is replaced. Every intermediate file has its own temporary name; ``target`` appears only by rename."""
    t0 = time.perf_counter()
    template = Path(template)
    if not template.is_file():
        raise ConversionError(f"the parent's GGUF file is missing ({template.name})")
    ftype = file_type_of(template) if ftype is None else ftype
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.with_name(target.name + ".lock")):
        if target.exists():
            try:
                load_check(target)
                return Converted(target, file_type_name(ftype), time.perf_counter() - t0, reused=True)
            except ConversionError:
                target.unlink()
        tok, model = load_merged(model_ref, adapter_ref)
        f16, final = unique_tmp(target.with_suffix(".f16")), unique_tmp(target)
        try:
            write_gguf(model, tok, template, f16, f32=ftype == 0)
            del model
            if ftype in (0, 1):  # an F32 / F16 template: the written file is the answer
                f16.rename(final)
            else:
                quantize(f16, final, ftype, like=template)
            load_check(final, len(tok))
            final.rename(target)
        except ConversionError:
            raise
        except Exception as exc:
            raise ConversionError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            for p in (f16, final):
                p.unlink(missing_ok=True)
    return Converted(target, file_type_name(ftype), time.perf_counter() - t0)


def child_gguf_path(folder: Path, ftype: int) -> Path:
    """Where a checkpoint folder's GGUF lives: beside its weights, named for its file type."""
    return Path(folder) / f"model.{file_type_name(ftype).lower()}.gguf"
