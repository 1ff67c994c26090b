"""Job configs: defaults from the papers, YAML round trip, unknown fields and bad values named in the error."""

from __future__ import annotations

import pytest

from vibestudio.training.jobs.config import (
    FULL_LR,
    LORA_LR,
    ConfigError,
    DPOJobConfig,
    help_table,
    load_config,
    make_config,
    save_config,
)


def test_defaults_follow_the_papers():
    cfg = DPOJobConfig()
    assert (cfg.beta, cfg.loss_type, cfg.lora, cfg.lora_r, cfg.lora_alpha, cfg.lora_dropout) == (
        0.1,
        "sigmoid",
        True,
        16,
        32,
        0.05,
    )
    assert cfg.lora_target_modules == "all-linear" and cfg.per_device_train_batch_size == 4
    assert cfg.max_length == 256 and cfg.publish and cfg.min_pairs == 4
    assert cfg.effective_learning_rate() == LORA_LR
    cfg.lora = False
    assert cfg.effective_learning_rate() == FULL_LR
    cfg.learning_rate = 1e-6
    assert cfg.effective_learning_rate() == 1e-6


def test_every_field_has_help():
    rows = help_table(DPOJobConfig)
    assert {name for name, _, _ in rows} >= {
        "beta",
        "loss_type",
        "lora_r",
        "snapshot_hash",
        "parent_contestant",
    }
    assert all(help_text for _, _, help_text in rows)


def test_yaml_round_trip(tmp_path):
    cfg = make_config("dpo", parent_contestant="smollm2-plain", snapshot_hash="abc", beta=0.2, max_steps=3)
    path = save_config(cfg, tmp_path / "c.yaml")
    assert "kind: dpo" in path.read_text()
    back = load_config(path)
    assert back == cfg and isinstance(back, DPOJobConfig)


def test_unknown_field_is_named(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("kind: dpo\nbeta: 0.1\nlearning_rat: 0.01\n")
    with pytest.raises(ConfigError, match="unknown field.*'learning_rat'"):
        load_config(p)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("beta", "high", "field 'beta'"),
        ("lora", "yes", "field 'lora': expected true/false"),
        ("max_steps", 0, "max_steps must be at least 1"),
        ("loss_type", "magic", "loss_type 'magic' unknown"),
        ("lora_dropout", 1.5, "lora_dropout must be in"),
        ("learning_rate", 2.0, "learning_rate must be in"),
    ],
)
def test_bad_values_are_named(field, value, message):
    with pytest.raises(ConfigError, match=message):
        make_config("dpo", **{field: value})


def test_ints_are_accepted_for_floats_and_ids_for_names():
    cfg = make_config("dpo", beta=1, parent_contestant=3)
    assert cfg.beta == 1.0 and isinstance(cfg.beta, float) and cfg.parent_contestant == "3"


def test_unknown_kind():
    with pytest.raises(ConfigError, match="unknown job kind 'ppo'"):
        make_config("ppo")
