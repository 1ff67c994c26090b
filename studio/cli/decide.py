"""``vibestudio decide A B [C ...]``: the decision card of A against each of the others.

A thin layer over ``standings.decision``. It shows quality (rating, interval, votes-to-flip), substance
(verifiable evals), vibes, sycophancy probes, speed and measured cost, and one plain sentence. "Can't
tell" lines name what is missing.
"""

import json

import typer

from vibestudio.studio.cli._common import fail, open_db


def decide(
    names: list[str] = typer.Argument(
        ..., help="Two or more contestants: the first against each of the others."
    ),
    price_per_hour: float = typer.Option(
        None, help="What an hour of the hardware costs (default: VIBESTUDIO_PRICE_PER_HOUR)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """One decision card: quality, substance, vibes, sycophancy, speed and cost, and a plain sentence."""
    from vibestudio.standings.decision import DecisionError, decision_cards

    db = open_db()
    try:
        cards = decision_cards(db, list(names), price_per_hour=price_per_hour)
    except DecisionError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps([c.to_dict() for c in cards], indent=2, default=str))
        return
    typer.echo("\n\n".join(c.to_markdown() for c in cards))
