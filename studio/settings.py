"""Settings from the environment (``VIBESTUDIO_*``) with defaults that make ``make demo`` work as is."""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VIBESTUDIO_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 7860
    database_url: str | None = None
    max_prompt_chars: int = 4000
    max_turns: int = 8
    answer_timeout_s: float = 180.0
    max_new_tokens: int = 512
    leaderboard_bootstrap: int = 100
    # login (studio/auth.py): auto = required once a user with a password exists; on; off
    auth: str = "auto"
    prompts_per_minute: int = 20  # per signed-in user (battle turns and regenerations); 0 = no limit
    votes_per_minute: int = 60
    failed_logins_per_minute: int = 5  # per user name, before further attempts are refused
    max_upload_mb: int = 100  # largest file the web app accepts (imports, personas)
