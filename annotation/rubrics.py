"""Rubrics as YAML "model spec" files: named, versioned criteria with a scale, text anchors and a weight.

A criterion's scale is ``binary`` (0/1), ``1-5``, ``1-7`` or ``categorical``. Categorical criteria name
their categories, stored as their index. Anchors describe levels in words. Weights combine the numeric
criteria into one overall score, after each is scaled to 0..1. Categorical criteria carry no weight. Every
problem in a file is reported at once, each naming the file and the field
(``default.yaml: criteria[2].scale: ...``). Nothing is half-loaded.

Rubrics are looked up by name in the user's folder (``$VIBESTUDIO_HOME/rubrics``) first. Then come the
ones shipped in ``annotation/data/rubrics``. A queue keeps a frozen copy of its rubric (``as_dict``). So
editing a file later never changes what earlier labels meant. This module knows nothing about the
database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from vibestudio.common.files import parse_yaml, read_yaml
from vibestudio.db.session import data_home

SCALES = ("binary", "1-5", "1-7", "categorical")  # and any other whole-number range "lo-hi", e.g. "0-4"
_RANGE = re.compile(r"^(\d{1,3})-(\d{1,3})$")
SHIPPED = Path(__file__).parent / "data" / "rubrics"
DEFAULT_RUBRIC = "default"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")


class RubricError(ValueError):
    """A rubric file or dict is invalid; ``errors`` lists every problem as ``source: field: message``."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__(
            "; ".join(errors) if len(errors) <= 5 else "; ".join(errors[:5]) + f" (+{len(errors) - 5})"
        )
        self.errors = errors


@dataclass(frozen=True)
class Criterion:
    name: str
    description: str
    scale: str
    anchors: dict[str, str] = field(default_factory=dict)
    weight: float = 1.0
    categories: tuple[str, ...] = ()

    @property
    def levels(self) -> list[float]:
        """The values a score may take (categorical: category indexes)."""
        if self.scale == "binary":
            return [0.0, 1.0]
        if self.scale == "categorical":
            return [float(i) for i in range(len(self.categories))]
        lo, hi = (int(x) for x in self.scale.split("-"))
        return [float(v) for v in range(lo, hi + 1)]

    @property
    def level_names(self) -> list[str]:
        if self.scale == "categorical":
            return list(self.categories)
        return [str(int(v)) for v in self.levels]

    @property
    def measurement(self) -> str:
        """Krippendorff measurement level that fits the scale."""
        return "nominal" if self.scale in ("binary", "categorical") else "ordinal"

    def coerce(self, value: Any) -> float:
        """A submitted score as the stored float; raises ValueError naming the allowed values."""
        if self.scale == "categorical" and isinstance(value, str) and value in self.categories:
            return float(self.categories.index(value))
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise ValueError(
                    f"{self.name}: {value!r} is not one of {', '.join(self.level_names)}"
                ) from None
        if isinstance(value, bool) or not isinstance(value, int | float) or float(value) not in self.levels:
            raise ValueError(f"{self.name}: {value!r} is not one of {', '.join(self.level_names)}")
        return float(value)

    def normalised(self, value: float) -> float:
        lo, hi = self.levels[0], self.levels[-1]
        return (value - lo) / (hi - lo)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "scale": self.scale,
            "weight": self.weight,
            "anchors": dict(self.anchors),
        }
        if self.categories:
            d["categories"] = list(self.categories)
        return d


@dataclass(frozen=True)
class Rubric:
    name: str
    version: int
    description: str
    criteria: tuple[Criterion, ...]
    source: str = ""

    def criterion(self, name: str) -> Criterion:
        for c in self.criteria:
            if c.name == name:
                return c
        raise KeyError(f"rubric {self.name!r} has no criterion {name!r}")

    def overall(self, scores: dict[str, float]) -> float | None:
        """Weighted mean of the numeric criteria present in ``scores`` (each scaled to 0..1)."""
        num = den = 0.0
        for c in self.criteria:
            if c.scale != "categorical" and c.weight > 0 and c.name in scores:
                num += c.weight * c.normalised(scores[c.name])
                den += c.weight
        return num / den if den else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "criteria": [c.as_dict() for c in self.criteria],
        }

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.as_dict(), sort_keys=False, allow_unicode=True)


def _valid_scale(scale: str) -> bool:
    if scale in SCALES:
        return True
    m = _RANGE.match(scale)
    if m is None:
        return False
    return int(m.group(1)) < int(m.group(2)) <= int(m.group(1)) + 100


def _criterion(raw: Any, where: str, errors: list[str]) -> Criterion | None:
    if not isinstance(raw, dict):
        errors.append(f"{where}: expected a mapping with name, description, scale")
        return None
    n_before = len(errors)
    unknown = set(raw) - {"name", "description", "scale", "anchors", "weight", "categories"}
    if unknown:
        errors.append(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        errors.append(f"{where}.name: must be a short identifier (letters, digits, _ . -), got {name!r}")
    desc = raw.get("description", "")
    if not isinstance(desc, str) or not desc.strip():
        errors.append(f"{where}.description: must be a non-empty string")
    scale = str(raw.get("scale", "")).strip()
    if not _valid_scale(scale):
        errors.append(
            f"{where}.scale: {raw.get('scale')!r} is not one of {', '.join(SCALES)} (or a range like 0-4)"
        )
    cats = raw.get("categories")
    categories: tuple[str, ...] = ()
    if scale == "categorical":
        if not isinstance(cats, list) or len(cats) < 2 or not all(isinstance(c, str) and c for c in cats):
            errors.append(f"{where}.categories: a categorical scale needs a list of at least 2 names")
        elif len(set(cats)) != len(cats):
            errors.append(f"{where}.categories: names repeat")
        else:
            categories = tuple(cats)
    elif cats is not None:
        errors.append(f"{where}.categories: only a categorical scale takes categories")
    weight = raw.get("weight", 0.0 if scale == "categorical" else 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
        errors.append(f"{where}.weight: must be a number >= 0, got {weight!r}")
    elif scale == "categorical" and weight:
        errors.append(f"{where}.weight: a categorical criterion is not numeric and cannot carry weight")
    anchors_raw = raw.get("anchors", {}) or {}
    anchors: dict[str, str] = {}
    if not isinstance(anchors_raw, dict):
        errors.append(f"{where}.anchors: expected a mapping level -> text")
    elif len(errors) == n_before:
        criterion = Criterion(str(name), str(desc), scale, {}, float(weight), categories)
        allowed = criterion.level_names
        for level, text in anchors_raw.items():
            key = str(level)
            if isinstance(level, float) and level.is_integer():
                key = str(int(level))
            if key not in allowed:
                errors.append(f"{where}.anchors.{level}: not a level of scale {scale} ({', '.join(allowed)})")
            elif isinstance(text, bool):
                errors.append(
                    f"{where}.anchors.{level}: YAML read an unquoted yes/no/on/off as {text}; put the text in quotes"
                )
            elif not isinstance(text, str) or not text.strip():
                errors.append(f"{where}.anchors.{level}: anchor text must be a non-empty string")
            else:
                anchors[key] = text.strip()
    if len(errors) > n_before:
        return None
    return Criterion(str(name), desc.strip(), scale, anchors, float(weight), categories)


def rubric_from_dict(raw: Any, source: str = "<rubric>") -> Rubric:
    """Validate a parsed rubric; raises RubricError listing every problem."""
    errors: list[str] = []
    if not isinstance(raw, dict):
        raise RubricError([f"{source}: expected a mapping with name, version, criteria"])
    unknown = set(raw) - {"name", "version", "description", "criteria"}
    if unknown:
        errors.append(f"{source}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        errors.append(f"{source}: name: must be a short identifier (letters, digits, _ . -), got {name!r}")
    version = raw.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        errors.append(f"{source}: version: must be a whole number >= 1, got {version!r}")
    desc = raw.get("description", "") or ""
    if not isinstance(desc, str):
        errors.append(f"{source}: description: must be a string")
    crits = raw.get("criteria")
    criteria: list[Criterion] = []
    if not isinstance(crits, list) or not crits:
        errors.append(f"{source}: criteria: must be a non-empty list")
    else:
        seen: set[str] = set()
        for i, c in enumerate(crits):
            crit = _criterion(c, f"{source}: criteria[{i}]", errors)
            cname = c.get("name") if isinstance(c, dict) else None
            if isinstance(cname, str):
                if cname in seen:
                    errors.append(f"{source}: criteria[{i}].name: {cname!r} is used twice")
                seen.add(cname)
            if crit is not None:
                criteria.append(crit)
    if errors:
        raise RubricError(errors)
    return Rubric(str(name), int(version or 0), str(desc).strip(), tuple(criteria), source)


def parse_rubric(text: str, source: str = "<rubric>") -> Rubric:
    raw, error = parse_yaml(text)
    if error is not None:
        raise RubricError([error.format(source)])
    return rubric_from_dict(raw, source)


def load_rubric(path: str | Path) -> Rubric:
    """A rubric file, read by the one reader of untrusted files (``common.files.read_yaml``)."""
    p = Path(path)
    raw, error = read_yaml(p)
    if error is not None:
        raise RubricError([error.format(p.name)])
    return rubric_from_dict(raw, p.name)


def user_rubric_dir() -> Path:
    return data_home() / "rubrics"


def _files() -> list[Path]:
    files: list[Path] = []
    for folder in (user_rubric_dir(), SHIPPED):
        if folder.is_dir():
            files += sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml"))
    return files


def list_rubrics() -> list[Rubric]:
    """Every valid rubric, user files shadowing shipped ones of the same name; invalid files are skipped."""
    out: dict[str, Rubric] = {}
    for f in _files():
        try:
            r = load_rubric(f)
        except RubricError:
            continue
        out.setdefault(r.name, r)
    return list(out.values())


def get_rubric(name_or_path: str | None = None) -> Rubric:
    """A rubric by name (user folder, then shipped) or by file path; the default when None."""
    key = name_or_path or DEFAULT_RUBRIC
    if key.endswith((".yaml", ".yml")) or "/" in key:
        return load_rubric(key)
    for f in _files():
        if f.stem == key:
            return load_rubric(f)
    for r in list_rubrics():
        if r.name == key:
            return r
    known = ", ".join(sorted(r.name for r in list_rubrics()))
    raise RubricError([f"no rubric named {key!r} (known: {known})"])


def save_rubric(rubric: Rubric, folder: Path | None = None) -> Path:
    """Write a rubric to the user's folder as ``<name>.yaml`` (validated again on the way)."""
    rubric_from_dict(rubric.as_dict(), rubric.name)
    folder = folder or user_rubric_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{rubric.name}.yaml"
    path.write_text(rubric.to_yaml(), encoding="utf-8")
    return path
