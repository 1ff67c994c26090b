"""Words from the same object as the numbers (issue 48): each generated sentence checked against what it describes.

Seen: "#1 is a dead heat: concise and plain are level" with all five models level; "X, Y, Z never lost or drew
against the other models they met" beside their losses to each other; "1 of 6" beside "below smollm2-warm (#5)";
"0 votes would flip their order" for two tied models; a 95% interval [+0%, +25%] beside p = 1; a KTO snapshot of
single answers called "pairs"; "prompt 3/3" beside a bar at 2/3; a drift title "on 12 held-out prompts" over a
body that compared nothing. Each property below is checked over generated states (Hypothesis).
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vibestudio.common.stats import mcnemar_change
from vibestudio.standings.decision import DecisionCard, sentence
from vibestudio.standings.ratings import flip_headline, headline, leaderboard, votes_to_flip
from vibestudio.standings.words import progress_note, rank_words
from vibestudio.training.report.text import drift_title

MODELS = ["concise", "plain", "listy", "warm", "loud", "terse"]
STATES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def battles(draw: Any) -> list[dict[str, Any]]:
    """Small arenas, often lopsided (perfect records), often all ties (everyone level)."""
    models = MODELS[: draw(st.integers(2, 6))]
    shape = draw(st.sampled_from(["random", "all ties", "lopsided"]))
    order = draw(st.permutations(models))
    out = []
    for _ in range(draw(st.integers(1, 40))):
        a, b = draw(st.sampled_from([(x, y) for x in models for y in models if x != y]))
        if shape == "all ties":
            winner = "tie"
        elif shape == "lopsided":
            winner = "model_a" if order.index(a) < order.index(b) else "model_b"
        else:
            winner = draw(st.sampled_from(["model_a", "model_b", "tie", "tie (bothbad)"]))
        out.append({"model_a": a, "model_b": b, "winner": winner})
    return out


def _outcome(record: dict[str, Any], model: str) -> str:
    """ "won", "lost" or "tie" for `model` in a record it played."""
    if record["winner"].startswith("tie"):
        return "tie"
    won = record["winner"] == ("model_a" if record["model_a"] == model else "model_b")
    return "won" if won else "lost"


@STATES
@given(records=battles())
def test_never_lost_is_true_of_the_records(records: list[dict[str, Any]]) -> None:
    """Every model a "never lost or drew" / "never won or drew" warning names did so against every model outside
    the named group (what the group did among itself is not claimed)."""
    board = leaderboard(records, ci_method="sandwich", elo_k=None)
    found = [w for w in board.warnings if w.startswith("some ratings are not identified")]
    for warning in found:
        body = warning.split(": ", 1)[1].split("; a weak prior")[0]
        for part in body.split("; "):
            m = re.fullmatch(
                r"(.+) never (lost|won) or drew against (a model it met|any model outside these \d+)", part
            )
            assert m, part
            group = set(m.group(1).replace(" and ", ", ").split(", "))
            bad = {"lost": {"lost", "tie"}, "won": {"won", "tie"}}[m.group(2)]
            for r in records:
                for x in group & {r["model_a"], r["model_b"]}:
                    other = r["model_b"] if x == r["model_a"] else r["model_a"]
                    if other not in group:
                        assert _outcome(r, x) not in bad, (part, r)


def _named(text: str) -> set[str]:
    """The model names a dead-heat headline lists."""
    listed = text.split("dead heat: ", 1)[1].split(" have the same rating")[0]
    if listed.startswith("all "):
        listed = listed.split("(", 1)[1].rstrip(")")
    return set(listed.replace(" and ", ", ").split(", "))


@STATES
@given(records=battles())
def test_votes_to_flip_headline_names_who_is_level(records: list[dict[str, Any]]) -> None:
    """A dead heat names exactly the models with #1's rating; "holds over" only over the board's own #2, with a
    gap; "all N" only when every model is level."""
    board = leaderboard(records, ci_method="sandwich", elo_k=None)
    flips = votes_to_flip(records)
    ratings = {m.name: m.rating for m in board.models}
    if board.models[0].cant_tell:
        return
    top = board.models[0].rating
    # level with #1: the same rating on a common scale (models outside the reference group can't be compared)
    level = {m.name for m in board.models if abs(m.rating - top) < 1e-3 and not m.cant_tell}
    for text in (headline(flips), flip_headline(flips.to_dict(with_votes=False), board.to_dict())):
        if "dead heat" in text:
            assert _named(text) == level, (text, ratings)
            assert ("all " in text) == (len(level) == len(ratings)) or text == headline(flips)
        elif "holds over" in text:
            first, second = text.split("#1 ", 1)[1].split(" unless")[0].split(" holds over ")
            assert level == {first}, (text, ratings)
            assert abs(ratings[second] - board.models[1].rating) < 1e-6, (text, ratings)


@STATES
@given(records=battles())
def test_flip_headline_speaks_of_this_board_only(records: list[dict[str, Any]]) -> None:
    """Under a tie model's board the headline names #1 only when that board's #1 and #2 are the pair it counted
    on (plain Bradley-Terry), and says where it counted."""
    board = leaderboard(records, method="davidson", ci_method="sandwich", elo_k=None)
    text = flip_headline(
        votes_to_flip(records).to_dict(with_votes=False), board.to_dict() | {"method": "davidson"}
    )
    if "holds over" in text:
        first, second = text.split("#1 ", 1)[1].split(" unless")[0].split(" holds over ")
        rows = board.models
        assert rows[0].rating - rows[1].rating > 1e-6 and abs(board.get(first).rating - rows[0].rating) < 1e-6
        assert abs(board.get(second).rating - rows[1].rating) < 1e-6
    if "holds over" in text or "dead heat" in text:
        assert "counted on the plain Bradley-Terry fit" in text


@STATES
@given(
    votes=st.none() | st.integers(0, 50),
    verdict=st.sampled_from(["tied", "alpha higher", "bravo higher", "can't tell"]),
    flip_higher=st.sampled_from(["alpha", "bravo", None]),
)
def test_card_flip_words_match_the_count(votes: int | None, verdict: str, flip_higher: str | None) -> None:
    """The decision card's sentence: no "0 votes would flip" (a dead heat is said as one), and a count only of the
    order it was counted on."""
    quality = {"verdict": verdict, "votes_to_flip": votes, "flip_higher": flip_higher, "a": {}, "b": {}}
    empty: dict[str, Any] = {"verdict": "can't tell", "a": {}, "b": {}}
    card = DecisionCard("alpha", "bravo", quality, empty, {}, {}, {}, "")
    text = sentence(card)
    assert not re.search(r"\b0 votes would flip", text)
    if votes == 0 and verdict != "can't tell":
        assert "same rating" in text
    winner = verdict.split(" ")[0] if verdict.endswith("higher") else None
    if votes and winner and flip_higher and flip_higher != winner:
        assert "would flip" not in text
    if votes and "would flip" in text:
        assert f"{votes} vote" in text


@STATES
@given(records=battles())
def test_rank_words_say_what_the_rank_interval_allows(records: list[dict[str, Any]]) -> None:
    """A place is said as the rank interval allows: one rank only when the interval is one rank."""
    board = leaderboard(records, ci_method="sandwich", elo_k=None)
    for m in board.models:
        words = rank_words(m.rank_low, m.rank_high, len(board.models))
        assert re.findall(r"#(\d+)", words) == (
            [str(m.rank_low)] if m.rank_low == m.rank_high else [str(m.rank_low), str(m.rank_high)]
        )
        assert words.endswith(f"of {len(board.models)}") == (m.rank_low == m.rank_high)


@STATES
@given(
    parent=st.lists(st.booleans(), min_size=1, max_size=40).flatmap(
        lambda p: st.tuples(st.just(p), st.lists(st.booleans(), min_size=len(p), max_size=len(p)))
    )
)
def test_interval_and_p_value_come_from_one_test(parent: tuple[list[bool], list[bool]]) -> None:
    """An eval change's 95% interval excludes 0 exactly when its p-value is below 0.05, and holds the change."""
    before, after = parent
    change = mcnemar_change(before, after)
    assert change.low - 1e-12 <= change.delta <= change.high + 1e-12
    excludes = change.low > 0 or change.high < 0
    assert excludes == (change.p < 0.05), change


@STATES
@given(
    done=st.integers(0, 500), extra=st.integers(0, 500), noun=st.sampled_from(["prompt", "item", "answer"])
)
def test_progress_note_counts_what_the_bar_counts(done: int, extra: int, noun: str) -> None:
    total = done + extra
    note = progress_note(done, total, noun)
    assert [int(x.replace(",", "")) for x in re.findall(r"[\d,]+", note)] == [done, total]


@STATES
@given(
    n=st.integers(0, 60),
    measured=st.booleans(),
    why=st.sampled_from(["only 12 held-out prompts (at least 20 needed)", "the child answered nothing"]),
)
def test_drift_title_matches_its_body(n: int, measured: bool, why: str) -> None:
    """The drift section's title says "on N held-out prompts" only over features compared on them."""
    report: dict[str, Any] = {"parent": "p", "n_prompts": n, "features": {}, "unmeasured": {}}
    if measured:
        report["features"] = {"tokens": {"parent": 1.0, "child": 2.0, "delta": 1.0, "low": 0.5, "high": 1.5}}
    else:
        report["unmeasured"] = {"drift/tokens": why}
    title = drift_title(report)
    assert (f"on {n} held-out prompts" in title) == measured
    if not measured:
        assert "not measured" in title and why in title


def test_unpaired_snapshot_counts_single_answers(db) -> None:
    """A KTO snapshot's rows are single answers, named so wherever they are counted."""
    from tests.helpers.standings import register_contestants, write_battles
    from vibestudio.annotation.snapshots import list_snapshots, snapshot_from_votes
    from vibestudio.training.publishing.publish import trained_on

    ids = register_contestants(db)
    write_battles(db, ids, 6)
    with db.session() as s:
        single = snapshot_from_votes(s, unpaired=True)
        paired = snapshot_from_votes(s)
        listed = {x["hash"]: x for x in list_snapshots(s)}
    assert single.unit == "single answer" and single.rows.endswith(("single answer", "single answers"))
    assert paired.unit == "pair" and paired.rows.endswith(("pair", "pairs"))
    assert listed[single.hash]["rows"] == single.rows and "pair" not in single.rows
    assert trained_on("", single.hash, single.n_pairs, single.unit).endswith(f"({single.rows})")


def test_decision_card_reads_the_evals_the_report_measured(db, tiny_model_dir) -> None:
    """The card said "no verifiable evals" for a child whose report showed 25% -> 33%: both now read one record of
    the same checked answers (the report stores them as the eval results the card reads)."""
    from vibestudio.arena.registry import ContestantSpec, register
    from vibestudio.standings.decision import decision_card
    from vibestudio.training.report.steps import drift_report

    with db.session() as s:
        parent = register(s, ContestantSpec("tiny-p", engine="transformers", model_ref=str(tiny_model_dir)))
        child = register(
            s,
            ContestantSpec("tiny-c", engine="transformers", model_ref=str(tiny_model_dir), parent_id=parent),
        )
    report = drift_report(
        db, child, n_prompts=20, max_tokens=4, eval_items=6, eval_max_tokens=4, describe_axes=0
    )
    assert report.evals["n"] == 6
    card = decision_card(db, "tiny-c", "tiny-p")
    substance = card.substance
    assert substance["a"]["n"] == substance["b"]["n"] == 6, card.missing
    assert (
        substance["a"]["value"] == report.evals["child"] and substance["b"]["value"] == report.evals["parent"]
    )
    assert not any("no verifiable evals" in m for m in card.missing)


def test_counts_are_named_for_what_they_count(db, tmp_path) -> None:
    """`n_battles` counted votes (a battle of two turns counted twice): the board now gives both, each named."""
    from sqlalchemy import func, select

    from tests.helpers.standings import register_contestants, write_battles
    from vibestudio.db.models import Battle, Vote
    from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService
    from vibestudio.standings.vote_cache import VoteCache

    ids = register_contestants(db)
    write_battles(db, ids, 40, mode="anonymous")
    board = LeaderboardService(db, VoteCache(db, tmp_path / "c")).board(BoardOptions(ci_method="sandwich"))
    with db.session() as s:
        for m in board["models"]:
            cid = ids[m["name"]]
            rated = (
                select(Vote.battle_id)
                .join(Battle, Vote.battle_id == Battle.id)
                .where((Battle.a_id == cid) | (Battle.b_id == cid), ~Vote.revealed_before_vote)
                .subquery()
            )
            votes = s.scalar(select(func.count()).select_from(rated))
            battles = s.scalar(select(func.count(func.distinct(rated.c.battle_id))))
            assert (m["n_votes"], m["n_battles"]) == (votes, battles), m
    assert any(m["n_votes"] > m["n_battles"] for m in board["models"])  # some battles had two turns
    assert all("fewer than 10 votes" in w for w in board["warnings"] if "fewer than" in w)
