"""Judge against people by vibe: a judge that always picks the longer, markdown-heavy, flattering answer while people
pick the plain one reads "judge more swayed" on those features with the evidence counts; features where the
answers never differ say "can't tell" with zero evidence, not 0; no judge or no humans is an error, not a zero."""

from __future__ import annotations

import pytest

from vibestudio.annotation.queues import NewItem, add_item, create_queue
from vibestudio.annotation.vibe_agreement import VibeAgreementError, vibe_agreement
from vibestudio.db.models import Label

FANCY = "## Great question!\n\n- **First**, a long and friendly point about it.\n- **Second**, another point, with more words."
PLAIN = "Two points: first one, second one."


def _queue(db, n=30, people="plain", judge="fancy", humans=("ann", "bob")):
    with db.session() as s:
        create_queue(s, "q")
        ids = []
        for i in range(n):
            fancy_first = i % 2 == 0  # the fancy answer is shown as answer 1 on half the items
            answers = (
                [FANCY + f" ({i})", PLAIN + f" ({i})"]
                if fancy_first
                else [PLAIN + f" ({i})", FANCY + f" ({i})"]
            )
            item = add_item(s, "q", NewItem([{"role": "user", "content": f"Q{i}"}], answers))
            s.flush()
            ids.append(item.id)
            fancy, plain = ("1", "2") if fancy_first else ("2", "1")
            if judge:
                pick = fancy if judge == "fancy" else plain
                s.add(Label(item_id=item.id, queue="q", annotator="judge:j", kind="judge", outcome=pick))
            for h in humans:
                pick = plain if people == "plain" else fancy
                s.add(Label(item_id=item.id, queue="q", annotator=h, kind="human", outcome=pick))
    return ids


def test_a_judge_swayed_by_style_reads_as_such(db):
    _queue(db)
    rep = vibe_agreement(db, "q", "j")
    cells = {c.feature: c for c in rep.cells}
    assert rep.n_items == rep.n_judged == rep.n_people == 30
    for f in ("tokens", "headers", "list_items", "bold", "flattery"):
        c = cells[f]
        assert c.items == 30 and c.judge_more == 30 and c.judge_n == 30 and c.people_more == 0, f
        assert c.paired_n == 30 and c.disagree == 30 and c.difference == 1.0
        assert c.verdict == "judge more swayed"
    emoji = cells["emoji"]  # neither answer has emoji: no evidence, and it says so
    assert (
        emoji.items == 0
        and emoji.paired_n == 0
        and emoji.difference is None
        and "can't tell" in emoji.verdict
    )
    assert emoji.rate("judge") is None


def test_agreeing_judge_and_people_cant_be_told_apart(db):
    _queue(db, people="fancy")
    cells = {c.feature: c for c in vibe_agreement(db, "q", "judge:j").cells}
    assert cells["tokens"].difference == 0.0 and cells["tokens"].verdict == "can't tell"
    assert cells["tokens"].disagree == 0


def test_people_more_swayed(db):
    _queue(db, people="fancy", judge="plain")
    assert {c.feature: c for c in vibe_agreement(db, "q", "j").cells}["bold"].verdict == "people more swayed"


def test_missing_judge_or_people_is_an_error(db):
    _queue(db, judge=None)
    with pytest.raises(VibeAgreementError, match="no verdicts"):
        vibe_agreement(db, "q", "j")


def test_no_humans_is_an_error(db):
    _queue(db, humans=())
    with pytest.raises(VibeAgreementError, match="no human labels"):
        vibe_agreement(db, "q", "j")
