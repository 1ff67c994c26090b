"""Rubric YAML files: the shipped default loads, every problem is named by file and field, scores coerce."""

from __future__ import annotations

import pytest

from vibestudio.annotation.rubrics import (
    RubricError,
    get_rubric,
    list_rubrics,
    load_rubric,
    parse_rubric,
    save_rubric,
)


def test_default_rubric_ships_with_the_five_criteria():
    r = get_rubric()
    assert r.name == "default" and r.version == 1
    assert [c.name for c in r.criteria] == [
        "helpfulness",
        "honesty",
        "no_sycophancy",
        "concision",
        "formatting",
    ]
    assert {c.scale for c in r.criteria} == {"1-5", "binary", "categorical"}
    assert all(c.anchors for c in r.criteria)
    fmt = r.criterion("formatting")
    assert fmt.measurement == "nominal" and fmt.coerce("over-formatted") == 1.0 and fmt.weight == 0.0
    assert r.criterion("helpfulness").measurement == "ordinal"
    assert {x.name for x in list_rubrics()} >= {"default", "helpsteer2"}


def test_overall_score_weights_numeric_criteria_scaled_to_unit_range():
    r = get_rubric()
    # helpfulness 5 -> 1.0 (w 2), honesty 3 -> 0.5 (w 2), no_sycophancy 0 -> 0 (w 1); formatting ignored
    assert r.overall({"helpfulness": 5, "honesty": 3, "no_sycophancy": 0, "formatting": 2}) == pytest.approx(
        3 / 5
    )


def test_every_problem_is_reported_with_file_and_field(tmp_path):
    bad = tmp_path / "spec.yaml"
    bad.write_text(
        """
name: my spec
version: 0
criteria:
  - name: tone
    description: Friendly?
    scale: 1-10x
  - name: tone
    description: ""
    scale: 1-7
    anchors: {9: too high}
  - name: style
    description: Which style?
    scale: categorical
    weight: 2
"""
    )
    with pytest.raises(RubricError) as info:
        load_rubric(bad)
    assert info.value.errors == [
        "spec.yaml: name: must be a short identifier (letters, digits, _ . -), got 'my spec'",
        "spec.yaml: version: must be a whole number >= 1, got 0",
        "spec.yaml: criteria[0].scale: '1-10x' is not one of binary, 1-5, 1-7, categorical (or a range like 0-4)",
        "spec.yaml: criteria[1].description: must be a non-empty string",
        "spec.yaml: criteria[1].name: 'tone' is used twice",
        "spec.yaml: criteria[2].categories: a categorical scale needs a list of at least 2 names",
        "spec.yaml: criteria[2].weight: a categorical criterion is not numeric and cannot carry weight",
    ]


def test_anchor_levels_duplicate_names_and_yaml_syntax(tmp_path):
    text = """name: x
version: 2
criteria:
  - {name: a, description: A, scale: binary, anchors: {0: no, 2: maybe}}
  - {name: a, description: B, scale: 1-5}
"""
    with pytest.raises(RubricError) as info:
        parse_rubric(text, "x.yaml")
    assert info.value.errors == [
        "x.yaml: criteria[0].anchors.0: YAML read an unquoted yes/no/on/off as False; put the text in quotes",
        "x.yaml: criteria[0].anchors.2: not a level of scale binary (0, 1)",
        "x.yaml: criteria[1].name: 'a' is used twice",
    ]
    with pytest.raises(RubricError, match=r"x.yaml:4: not valid YAML"):
        parse_rubric("name: x\nversion: 1\ncriteria: [\n  - {", "x.yaml")


def test_user_rubric_shadows_shipped_and_round_trips(tmp_path):
    r = get_rubric()
    path = save_rubric(r)
    assert path.parent.name == "rubrics" and load_rubric(path) == parse_rubric(r.to_yaml(), path.name)
    assert get_rubric("default").source == "default.yaml"
    with pytest.raises(RubricError, match="no rubric named 'nope'"):
        get_rubric("nope")


def test_coerce_refuses_values_off_the_scale():
    c = get_rubric().criterion("helpfulness")
    assert c.coerce("4") == 4.0 and c.coerce(2) == 2.0
    for bad in (0, 6, 2.5, "x", True):
        with pytest.raises(ValueError, match="is not one of 1, 2, 3, 4, 5"):
            c.coerce(bad)
