"""Personas from YAML: valid files register every persona; any error names file, persona and field and stores
nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from vibestudio.arena.personas import (
    PersonaError,
    add_personas,
    load_persona_file,
    parse_personas,
    persona_to_mapping,
    spec_from_mapping,
)
from vibestudio.arena.registry import BUILTIN_GGUF, get_contestant
from vibestudio.db.models import Contestant

GOOD = """
personas:
  - name: sunny
    system_prompt: You are Sunny, a cheerful assistant.
    prefill: "What a great question! "
    sampling: {temperature: 0.7, max_tokens: 40}
    aliases: [Sunny]
  - name: remote
    engine: openai
    model: smol
    engine_config: {base_url: "http://127.0.0.1:8000/v1", api_key_env: MY_KEY}
"""


def _count(db):
    with db.session() as s:
        return s.scalar(select(func.count(Contestant.id)))


def test_yaml_file_registers_every_persona(db, tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(GOOD)
    specs = load_persona_file(path)
    with db.session() as s:
        ids = add_personas(s, specs, str(path))
    assert len(ids) == 2
    with db.session() as s:
        sunny = get_contestant(s, "sunny")
        remote = get_contestant(s, "remote")
    assert sunny.model_ref == BUILTIN_GGUF and sunny.prefill == "What a great question! "
    assert sunny.sampling == {"temperature": 0.7, "max_tokens": 40} and "Sunny" in sunny.aliases
    assert "SmolLM2" in sunny.aliases  # the builtin model's family is added
    assert remote.engine == "openai" and remote.engine_config["api_key_env"] == "MY_KEY"


def test_single_mapping_and_list_forms_and_round_trip():
    one = parse_personas("name: solo\nsystem_prompt: hi\n", "one.yaml")
    many = parse_personas("- name: a\n- name: b\n", "many.yaml")
    assert [s.public_name for s in one] == ["solo"] and [s.public_name for s in many] == ["a", "b"]
    assert spec_from_mapping(persona_to_mapping(one[0])) == one[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "personas:\n  - name: x\n    temprature: 0.3\n",
            r"p.yaml: persona 1 \('x'\): unknown field 'temprature'",
        ),
        ("- name: a\n- name: b\n  sampling: {temprature: 1}\n", r"persona 2 \('b'\): unknown sampling field"),
        ("- name: a\n  engine: openai\n  model: m\n", r"persona 1 \('a'\).*'base_url' is required"),
        (
            "- name: a\n  engine: openai\n  model: m\n  engine_config: {base_url: 'http://x/v1', retries: 3}\n",
            r"unknown engine_config field\(s\): retries",
        ),
        ("- name: a\n  api_key: sk-123\n", r"'api_key' is not allowed"),
        ("- name: a\n  engine: tpu\n", r"engine 'tpu' unknown"),
        ("- name: a\n  aliases: 3\n", r"'aliases' must be a list"),
        ("- name: a\n  sampling: hot\n", r"'sampling' must be a mapping"),
        ("- system_prompt: nameless\n", r"'name' is required"),
        ("- name: a\n- name: a\n", r"name 'a' appears twice"),
        ("personas: []\nextra: 1\n", r"unknown top-level field 'extra'"),
        ("name: [unclosed\n", r"not valid YAML"),
        ("", r"no personas"),
        ("- name: a\n  sampling: {max_tokens: 0}\n", r"max_tokens must be a positive integer"),
    ],
)
def test_bad_persona_files_name_the_problem(text, message):
    with pytest.raises(PersonaError, match=message):
        parse_personas(text, "p.yaml")


def test_a_failing_persona_stores_none_of_the_file(db):
    with db.session() as s:
        add_personas(s, parse_personas("name: taken\n", "a.yaml"))
    specs = parse_personas("- name: fresh\n- name: taken\n", "b.yaml")
    with (
        pytest.raises(PersonaError, match="b.yaml: a contestant named 'taken' already exists"),
        db.session() as s,
    ):
        add_personas(s, specs, "b.yaml")
    assert _count(db) == 1


def test_unreadable_file_is_a_persona_error(tmp_path):
    with pytest.raises(PersonaError, match="cannot read"):
        load_persona_file(tmp_path / "missing.yaml")
