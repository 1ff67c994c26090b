"""``scripts/house.py`` loaded as the module ``house`` (scripts/ is not a package): the house checks read its
import graph and its one list of the studio's packages, lowest layer first."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

if "house" in sys.modules:
    house = sys.modules["house"]
else:
    _spec = importlib.util.spec_from_file_location("house", ROOT / "scripts" / "house.py")
    assert _spec is not None and _spec.loader is not None
    house = importlib.util.module_from_spec(_spec)
    sys.modules["house"] = house
    _spec.loader.exec_module(house)
