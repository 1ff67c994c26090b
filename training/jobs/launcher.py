"""The launcher config a job runs with (``launcher: accelerate``): written by the studio, never a user's
file.

A job's ``accelerate_config`` names a file in the data home's ``launch`` folder. The operator puts vetted
accelerate / DeepSpeed / FSDP setups there; nothing a user uploads lands there.
- It is read with ``common.paths``: a plain file of at most ``MAX_LAUNCH_BYTES``, no link out of the
  folder.
- It is parsed with the safe YAML loader.
- It is re-emitted from an allow-list of keys, each with a typed value. The keys cover the distributed
  type (among a fixed set), mixed precision, one machine, GPU ids, ZeRO stage and CPU offload, FSDP
  sharding.
Anything else is refused, naming the field and the key. That includes a command list or file, a TPU or MPI
setup, a DeepSpeed config file or host file, a multi-node launcher, a dynamo backend, and a rendezvous on
another host. The studio writes the result as ``accelerate.yaml`` in the job's own folder and launches
with that file. So the launcher reads only what was checked. ``num_processes`` comes from the job.

Imports common and db (the data home). Raises ``LaunchConfigError`` (a ``ValueError``) whose message
starts with the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from vibestudio.common.files import parse_yaml
from vibestudio.common.paths import PathRefused, read_named_file
from vibestudio.db.session import data_home

FIELD = "accelerate_config"
MAX_LAUNCH_BYTES = 64 * 2**10
WHERE = "the data home's launch folder"
DISTRIBUTED_TYPES = ("NO", "MULTI_GPU", "DEEPSPEED", "FSDP")
_GPU_IDS = re.compile(r"^(all|\d{1,3}(,\d{1,3}){0,63})$")
_CLASS_NAMES = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}(,[A-Za-z_][A-Za-z0-9_]{0,127}){0,15}$")


class LaunchConfigError(ValueError):
    """A launcher config that may not be used; the message starts with the field's name."""


def launch_dir() -> Path:
    return data_home() / "launch"


def _choice(*options: Any) -> Any:
    def check(value: Any) -> Any:
        if isinstance(value, str):
            for option in options:
                if isinstance(option, str) and value.strip().lower() == option.lower():
                    return option
        if (
            not isinstance(value, str)
            and value in options
            and type(value) is type(options[options.index(value)])
        ):
            return value
        raise ValueError(f"one of {', '.join(map(str, options))}")

    return check


def _number(kind: type, lo: float, hi: float) -> Any:
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"a number from {lo:g} to {hi:g}")
        if kind is int and not float(value).is_integer():
            raise ValueError(f"a whole number from {lo:g} to {hi:g}")
        if not lo <= value <= hi:
            raise ValueError(f"a number from {lo:g} to {hi:g}")
        return kind(value)

    return check


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("true or false")
    return value


def _pattern(rx: re.Pattern[str], what: str) -> Any:
    def check(value: Any) -> str:
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(text, str) or not rx.match(text):
            raise ValueError(what)
        return text

    return check


#: The keys a launcher config may hold, each with its check (which returns the value written).
TOP: dict[str, Any] = {
    "compute_environment": _choice("LOCAL_MACHINE"),
    "distributed_type": _choice(*DISTRIBUTED_TYPES),
    "mixed_precision": _choice("no", "fp16", "bf16"),
    "use_cpu": _flag,
    "debug": _flag,
    "num_processes": _number(int, 1, 1024),  # the job's num_processes is what runs (its command line wins)
    "num_machines": _choice(1),  # one host: several hosts go through workers, never a user's rendezvous
    "machine_rank": _choice(0),
    "gpu_ids": _pattern(_GPU_IDS, "'all' or GPU numbers separated by commas"),
    "rdzv_backend": _choice("static"),
    "same_network": _flag,
    "main_training_function": _choice("main"),
    "enable_cpu_affinity": _flag,
    "downcast_bf16": _choice("no", "yes", False, True),
    "tpu_use_cluster": _choice(False),
    "tpu_use_sudo": _choice(False),
    "tpu_env": _choice([]),
}
DEEPSPEED: dict[str, Any] = {
    "zero_stage": _number(int, 0, 3),
    "gradient_accumulation_steps": _number(int, 1, 4096),
    "gradient_clipping": _number(float, 0, 1e6),
    "offload_optimizer_device": _choice("none", "cpu"),
    "offload_param_device": _choice("none", "cpu"),
    "zero3_init_flag": _flag,
    "zero3_save_16bit_model": _flag,
}
FSDP: dict[str, Any] = {
    "fsdp_version": _number(int, 1, 2),
    "fsdp_sharding_strategy": _choice("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", 1, 2, 3, 4),
    "fsdp_reshard_after_forward": _flag,
    "fsdp_offload_params": _flag,
    "fsdp_auto_wrap_policy": _choice("TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP"),
    "fsdp_transformer_layer_cls_to_wrap": _pattern(_CLASS_NAMES, "class names separated by commas"),
    "fsdp_min_num_params": _number(int, 0, 10**12),
    "fsdp_backward_prefetch": _choice("BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH"),
    "fsdp_forward_prefetch": _flag,
    "fsdp_state_dict_type": _choice("FULL_STATE_DICT", "SHARDED_STATE_DICT", "LOCAL_STATE_DICT"),
    "fsdp_use_orig_params": _flag,
    "fsdp_cpu_ram_efficient_loading": _flag,
    "fsdp_sync_module_states": _flag,
    "fsdp_activation_checkpointing": _flag,
}
NESTED = {"deepspeed_config": DEEPSPEED, "fsdp_config": FSDP}
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def _key_name(key: Any, where: str) -> str:
    """A key as a message may show it: an identifier as is (``'deepspeed_config.zero_stage'``), anything
    else not repeated."""
    return repr(where + key) if isinstance(key, str) and _KEY.match(key) else "(a key that is not a name)"


def _vet(data: dict[Any, Any], allowed: dict[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in allowed:
            raise LaunchConfigError(
                f"{FIELD}: key {_key_name(key, where)} is not allowed (allowed: {', '.join(allowed)})"
            )
        try:
            out[key] = allowed[key](value)
        except ValueError as exc:
            raise LaunchConfigError(f"{FIELD}: key {_key_name(key, where)} must be {exc}") from None
    return out


def vetted(data: Any) -> dict[str, Any]:
    """A launcher config mapping rebuilt from the allowed keys only (``LaunchConfigError`` on any other)."""
    if not isinstance(data, dict):
        raise LaunchConfigError(f"{FIELD}: expected a mapping of accelerate settings")
    top = {k: v for k, v in data.items() if k not in NESTED}
    out = _vet(top, TOP, "")
    for name, allowed in NESTED.items():
        if name in data:
            if not isinstance(data[name], dict):
                raise LaunchConfigError(f"{FIELD}: key {name!r} must be a mapping")
            out[name] = _vet(data[name], allowed, f"{name}.")
    kind = out.setdefault("distributed_type", "NO")
    if "deepspeed_config" in out and kind != "DEEPSPEED":
        raise LaunchConfigError(f"{FIELD}: deepspeed_config needs distributed_type: DEEPSPEED")
    if "fsdp_config" in out and kind != "FSDP":
        raise LaunchConfigError(f"{FIELD}: fsdp_config needs distributed_type: FSDP")
    out["compute_environment"] = "LOCAL_MACHINE"
    out["num_machines"] = 1
    out["machine_rank"] = 0
    return out


def read_launch_config(value: str) -> dict[str, Any]:
    """The vetted mapping of the launcher config ``value`` names (a file in the data home's launch folder)."""
    try:
        raw = read_named_file(value, FIELD, [launch_dir()], MAX_LAUNCH_BYTES, WHERE)
    except PathRefused as exc:
        raise LaunchConfigError(str(exc)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise LaunchConfigError(f"{FIELD}: the file is not UTF-8 text") from None
    data, error = parse_yaml(text)
    if error is not None:
        raise LaunchConfigError(f"{FIELD}: not valid YAML ({error.format()})")
    return vetted(data)


def write_launch_config(value: str, num_processes: int, folder: Path) -> Path:
    """Write the vetted config ``value`` names, with the job's ``num_processes``, as ``accelerate.yaml`` in the
    job's ``folder``; the path to launch with."""
    data = read_launch_config(value)
    data["num_processes"] = int(num_processes)
    target = Path(folder) / "accelerate.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(data, sort_keys=True), encoding="utf-8")
    return target
