"""Migration 0010_lifecycle: existing contestants get one state (active -> released, inactive and held by their
newest verdict -> held, other inactive -> hidden), each non-released one with a logged reason; and back down."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from vibestudio.db.session import Database, alembic_config


def test_existing_rows_get_a_state_and_a_logged_reason(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    cfg = alembic_config(url)
    command.upgrade(cfg, "0009_merge_fan")
    db = Database(url)
    with db.engine.begin() as conn:
        for cid, name, active in ((1, "plays", 1), (2, "held-by-verdict", 0), (3, "hidden-by-hand", 0),
                                  (4, "released-after-hold", 1)):  # fmt: skip
            conn.execute(
                text(
                    "INSERT INTO contestants (id, public_name, engine, model_ref, persona, sampling, aliases, "
                    "active, engine_config, created_at) VALUES (:i, :n, 'llama_cpp', 'm', '{}', '{}', '[]', :a, "
                    "'{}', CURRENT_TIMESTAMP)"
                ),
                {"i": cid, "n": name, "a": active},
            )
        for cid, held in (
            (2, 0),
            (2, 1),
            (3, 1),
            (3, 0),
            (4, 1),
        ):  # newest verdict event per contestant counts
            conn.execute(
                text(
                    "INSERT INTO verdict_events (contestant_id, action, verdict, held, reason, details, created_at) "
                    "VALUES (:c, 'verdict', 'regress', :h, 'r', '{}', CURRENT_TIMESTAMP)"
                ),
                {"c": cid, "h": held},
            )
    db.migrate()
    with db.engine.connect() as conn:
        states = dict(conn.execute(text("SELECT public_name, state FROM contestants")).all())
        events = conn.execute(
            text("SELECT contestant_id, action, to_state, reason FROM contestant_events")
        ).all()
    assert states == {
        "plays": "released",
        "held-by-verdict": "held",
        "hidden-by-hand": "hidden",
        "released-after-hold": "released",  # it was active: a person had let it in
    }
    assert sorted((c, a, s) for c, a, s, _ in events) == [(2, "migrate", "held"), (3, "migrate", "hidden")]
    with db.engine.connect() as conn:  # dropping the old column lost none of the rows that cascade from it
        assert conn.execute(text("SELECT COUNT(*) FROM verdict_events")).scalar() == 5
    command.downgrade(cfg, "0009_merge_fan")
    with db.engine.connect() as conn:
        active = dict(conn.execute(text("SELECT public_name, active FROM contestants")).all())
    assert active == {"plays": 1, "held-by-verdict": 0, "hidden-by-hand": 0, "released-after-hold": 1}
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM verdict_events")).scalar() == 5
    db.dispose()
