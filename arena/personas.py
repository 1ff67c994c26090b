"""Personas: a contestant written as data (YAML, a UI form, CLI flags).

A persona is an engine model, a system prompt, a prefill, decoding parameters and aliases. A file holds
one persona (a mapping), a list of them, or ``{personas: [...]}``::

    personas:
      - name: sunny                      # public name, shown after the vote
        engine: llama_cpp                # llama_cpp (default) | transformers | openai | vllm
        model: builtin:smollm2-135m-instruct-q4_1
        system_prompt: You are Sunny, a cheerful assistant.
        prefill: "What a great question! "
        sampling: {temperature: 0.7, max_tokens: 120}
        aliases: [Sunny]                 # names an answer must not say before the vote
        engine_config: {base_url: http://127.0.0.1:8000/v1, api_key_env: MY_KEY}   # HTTP engines only

Everything is checked before anything is written. These raise ``PersonaError`` naming the file, the
persona and the field: an unknown field, a wrong type, a duplicate name, an unknown sampling or
engine_config field. A signed-in user's ``model``, ``adapter`` and ``engine_config.serve.model`` may name
only files under the model folders (``arena.model_files``). They never name another researcher's
unpublished checkpoint. API keys are refused: name the environment variable that holds one
(``api_key_env``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from vibestudio.accounts import require_role
from vibestudio.arena.model_files import checked_spec
from vibestudio.arena.registry import BUILTIN_GGUF, ContestantSpec, RegistryError, register, validate_spec
from vibestudio.common.files import parse_yaml, read_yaml
from vibestudio.common.paths import PathRefused

FIELDS = {
    "name": "public name, unique (required)",
    "engine": "llama_cpp | transformers | openai | vllm (default llama_cpp)",
    "model": "model reference: builtin:..., a GGUF path, an HF directory, or a served model name",
    "adapter": "PEFT adapter directory (transformers, vllm)",
    "system_prompt": "system message sent first",
    "prefill": "opening of every answer, continued by the model",
    "description": "one line shown in lists (after the vote)",
    "sampling": "temperature, top_p, max_tokens, seed, repeat_penalty",
    "aliases": "names an answer must not mention before the vote",
    "engine_config": "engine settings (HTTP engines: base_url, api_key_env, timeout_s, concurrency, ...)",
}
_STRINGS = ("name", "engine", "model", "adapter", "system_prompt", "prefill", "description")


MAX_TEXT_CHARS = 16_000  # system prompt, prefill, description: far more than any context window takes


class PersonaError(ValueError):
    """A persona definition is invalid; the message names the file, the persona and the field."""


def spec_from_mapping(data: Any, where: str = "persona") -> ContestantSpec:
    """Validate one persona mapping and turn it into a ContestantSpec (nothing is written)."""
    if not isinstance(data, dict):
        raise PersonaError(f"{where}: expected a mapping of fields, got {type(data).__name__}")
    name = data.get("name")
    label = f"{where} ({name!r})" if isinstance(name, str) and name else where
    unknown = [k for k in data if k not in FIELDS]
    if "api_key" in data:
        raise PersonaError(
            f"{label}: field 'api_key' is not allowed; put the key in an environment variable and "
            "name it with engine_config.api_key_env"
        )
    if unknown:
        raise PersonaError(
            f"{label}: unknown field {unknown[0]!r}"
            + (f" (and {', '.join(map(repr, unknown[1:]))})" if unknown[1:] else "")
            + f"; known fields: {', '.join(FIELDS)}"
        )
    if not isinstance(name, str) or not name.strip():
        raise PersonaError(f"{label}: field 'name' is required and must be a non-empty string")
    for key in _STRINGS:
        if data.get(key) is not None and not isinstance(data[key], str):
            raise PersonaError(f"{label}: field {key!r} must be a string, got {type(data[key]).__name__}")
        if isinstance(data.get(key), str) and len(data[key]) > MAX_TEXT_CHARS:
            raise PersonaError(
                f"{label}: field {key!r} is {len(data[key])} characters; the limit is {MAX_TEXT_CHARS}"
            )
        if isinstance(data.get(key), str) and "\x00" in data[key]:
            raise PersonaError(f"{label}: field {key!r} contains a NUL character (binary data?)")
    for key in ("sampling", "engine_config"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise PersonaError(f"{label}: field {key!r} must be a mapping, got {type(data[key]).__name__}")
    aliases = data.get("aliases") or []
    if isinstance(aliases, str):
        aliases = [aliases]
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise PersonaError(f"{label}: field 'aliases' must be a list of strings")
    spec = ContestantSpec(
        public_name=name.strip(),
        engine=data.get("engine") or "llama_cpp",
        model_ref=data.get("model") or BUILTIN_GGUF,
        adapter_ref=data.get("adapter") or None,
        system_prompt=data.get("system_prompt") or "",
        prefill=data.get("prefill") or "",
        description=data.get("description") or "",
        sampling=dict(data.get("sampling") or {}),
        aliases=[a.strip() for a in aliases if a.strip()],
        engine_config=dict(data.get("engine_config") or {}),
    )
    try:
        validate_spec(spec)
    except RegistryError as exc:
        msg = str(exc).removeprefix(f"contestant {spec.public_name!r}: ")
        raise PersonaError(f"{label}: {msg}") from exc
    return spec


def parse_personas(text: str, source: str = "personas.yaml") -> list[ContestantSpec]:
    """Parse YAML text holding one persona, a list, or ``{personas: [...]}``; validate every entry."""
    data, error = parse_yaml(text)
    if error is not None:
        raise PersonaError(error.format(source))
    return personas_from_data(data, source)


def personas_from_data(data: Any, source: str) -> list[ContestantSpec]:
    """Validate parsed YAML holding one persona, a list, or ``{personas: [...]}``."""
    if isinstance(data, dict) and "personas" in data:
        extra = [k for k in data if k != "personas"]
        if extra:
            raise PersonaError(f"{source}: unknown top-level field {extra[0]!r}; expected only 'personas'")
        data = data["personas"]
    items = data if isinstance(data, list) else [data]
    if not items or data is None:
        raise PersonaError(f"{source}: no personas found")
    specs = [spec_from_mapping(item, f"{source}: persona {i}") for i, item in enumerate(items, start=1)]
    seen: set[str] = set()
    for i, spec in enumerate(specs, start=1):
        if spec.public_name in seen:
            raise PersonaError(f"{source}: persona {i}: name {spec.public_name!r} appears twice in the file")
        seen.add(spec.public_name)
    return specs


def load_persona_file(path: str | Path) -> list[ContestantSpec]:
    """Personas of a YAML file people bring, read by the one reader of untrusted files (``common.files.read_yaml``:
    UTF-8, size-limited, alias bombs refused); every error names the file."""
    data, error = read_yaml(path)
    if error is not None:
        raise PersonaError(error.format(str(path)))
    return personas_from_data(data, str(path))


def import_persona_file(
    session: Session, path: str | Path, source: str | None = None, user_id: int | None = None
) -> list[ContestantSpec]:
    """An uploaded personas file, registered in the caller's transaction: the role is checked *before* the file
    is read or parsed (parsing YAML costs CPU a low role must not spend), and errors name ``source`` (default:
    the file's base name), never the server's path of the upload."""
    require_role(session, user_id, "researcher")
    where = source or Path(path).name
    data, error = read_yaml(path)
    if error is not None:
        raise PersonaError(error.format(where))
    specs = personas_from_data(data, where)
    add_personas(session, specs, where, user_id=user_id)
    return specs


def add_personas(
    session: Session, specs: list[ContestantSpec], source: str = "personas", user_id: int | None = None
) -> list[int]:
    """Register every persona in the caller's transaction; any failure raises and the caller rolls back."""
    user = require_role(session, user_id, "researcher")
    ids = []
    for spec in specs:
        try:  # a path a user names resolves under the model folders (arena.model_files), stored resolved
            ids.append(register(session, checked_spec(session, spec, user)))
        except PathRefused as exc:
            raise PersonaError(f"{source}: persona {spec.public_name!r}: {exc}") from exc
        except RegistryError as exc:
            raise PersonaError(f"{source}: {exc}") from exc
    return ids


def persona_to_mapping(spec: ContestantSpec) -> dict[str, Any]:
    """The YAML mapping of a spec (round-trips through ``spec_from_mapping``); empty fields left out."""
    out: dict[str, Any] = {
        "name": spec.public_name,
        "engine": spec.engine,
        "model": spec.model_ref,
        "adapter": spec.adapter_ref,
        "system_prompt": spec.system_prompt,
        "prefill": spec.prefill,
        "description": spec.description,
        "sampling": spec.sampling,
        "aliases": spec.aliases,
        "engine_config": spec.engine_config,
    }
    return {k: v for k, v in out.items() if v not in (None, "", [], {})}
