"""Commands that open the studio as the web app does say what is wrong with its settings, without a traceback."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from vibestudio.studio.cli import app


@pytest.mark.parametrize("addresses", [None, "not-an-address"])
def test_proxy_mode_without_usable_proxy_addresses_is_a_clear_error(monkeypatch, addresses):
    monkeypatch.setenv("VIBESTUDIO_AUTH", "proxy")
    if addresses is None:
        monkeypatch.delenv("VIBESTUDIO_PROXY_ADDRESSES", raising=False)
    else:
        monkeypatch.setenv("VIBESTUDIO_PROXY_ADDRESSES", addresses)
    result = CliRunner().invoke(app, ["battle", "--prompt", "Hello?"])
    assert result.exit_code == 1, result.output
    assert "VIBESTUDIO_PROXY_ADDRESSES" in result.output and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
