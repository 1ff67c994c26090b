"""A relative data home names one folder for every process: the one the command started in."""

from __future__ import annotations

from pathlib import Path

import pytest

from vibestudio.db.session import data_home, default_database_url


def test_a_relative_home_is_made_absolute_against_the_starting_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VIBESTUDIO_HOME", "studio-home")
    home = data_home()
    assert home.is_absolute() and home == tmp_path / "studio-home" and home.is_dir()
    assert default_database_url() == f"sqlite:///{tmp_path / 'studio-home' / 'studio.sqlite'}"


def test_a_home_under_the_user_folder_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("VIBESTUDIO_HOME", "~/vs")
    assert data_home() == tmp_path / "vs"
