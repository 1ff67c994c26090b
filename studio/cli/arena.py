"""``vibestudio battle`` and ``vibestudio prompts import|list``: play the arena from the terminal, and manage
its prompt sets.
"""

from pathlib import Path

import typer

from vibestudio.studio.cli._common import fail, group, open_context, open_db

prompts_app = group(help="Prompt sets for the arena.", no_args_is_help=True)


def battle(
    prompt: list[str] = typer.Option(
        None, "--prompt", help="A turn to send (repeatable); asked when absent."
    ),
    vote: list[str] = typer.Option(
        None, "--vote", help="Vote per turn: left, right, tie, both_good, both_bad or skip (repeatable)."
    ),
    named: str = typer.Option(
        None, help="LEFT,RIGHT contestant names: a named battle (left out of ratings)."
    ),
    self_play: str = typer.Option(
        None,
        "--self-play",
        help="NAME: one contestant on both sides at two temperatures (on-policy preference pairs; left out "
        "of ratings). Which side had which temperature shows after the battle.",
    ),
    temperatures: str = typer.Option(
        None,
        "--temperatures",
        help="With --self-play: two temperatures, e.g. 0.3,1.0 (default: the contestant's own and the farther "
        "of 0.3 and 1.0).",
    ),
) -> None:
    """Play a battle in the terminal: each turn streams to both models, you vote, then both are revealed."""
    from vibestudio.arena.battles import BattleError
    from vibestudio.arena.registry import RegistryError, get_contestant
    from vibestudio.arena.self_play import parse_temperatures

    if named and self_play:
        fail("choose --named or --self-play, not both")
    if temperatures is not None and not self_play:
        fail("--temperatures goes with --self-play NAME")
    try:
        temps = parse_temperatures(temperatures) if temperatures is not None else None
    except ValueError as exc:
        fail(str(exc))
    ctx = open_context()
    svc = ctx.arena
    prompts, votes = list(prompt or []), list(vote or [])
    try:
        if self_play:
            view = svc.start_self_play(self_play.strip(), temps)
            low, high = view.temperatures or (None, None)
            typer.echo(f"Self-play: {view.left_name} at temperatures {low:g} and {high:g} (sides hidden).")
        elif named:
            left, _, right = named.partition(",")
            with ctx.db.session() as s:
                pair = (get_contestant(s, left.strip()).id, get_contestant(s, right.strip()).id)
            view = svc.start_battle(pair=pair, mode="named")
        else:
            view = svc.start_battle()
        i = 0
        while True:
            text = (
                prompts[i]
                if i < len(prompts)
                else (None if prompts else typer.prompt("You (empty to end)", ""))
            )
            if not text:
                break
            last = list(svc.generate_turn(view.battle_id, text))[-1]
            if last.error:
                fail(last.error)
            typer.echo(f"\n--- Model A ---\n{last.left}\n--- Model B ---\n{last.right}\n")
            choice = votes[i] if i < len(votes) else (None if votes else typer.prompt("Vote", "skip"))
            if choice and choice != "skip":
                svc.record_vote(view.battle_id, choice)
                typer.echo(f"Vote on turn {i + 1} saved.")
            i += 1
        r = svc.reveal(view.battle_id)
    except (BattleError, RegistryError) as exc:
        fail(str(exc))
    note = " (an answer named a model before the vote: not rated)" if r.revealed_before_vote else ""

    def at(sampling: dict | None) -> str:
        return f" at temperature {sampling['temperature']:g}" if sampling else ""

    typer.echo(
        f"Model A was {r.left_name}{at(r.left_sampling)} · Model B was {r.right_name}{at(r.right_sampling)}{note}"
    )


@prompts_app.command("import")
def prompts_import(
    file: Path = typer.Argument(
        ...,
        help="JSONL, JSON or CSV in the MT-Bench layout (turns, category, question_id) or Arena-Hard's "
        "(v0.1: question_id, category, cluster, turns; v2.0: uid, category, subcategory, prompt).",
    ),
    name: str = typer.Option(None, "--name", help="Prompt set name (default: the file name without suffix)."),
) -> None:
    """Import a prompt set; every row is checked before anything is written."""
    from vibestudio.arena.prompts import PromptImportError, import_prompt_set

    try:
        data = file.read_bytes()
    except OSError as exc:
        fail(f"{file}: {exc}")
    db = open_db()
    try:
        with db.session() as s:
            n = import_prompt_set(s, name or file.stem, file.name, data, str(file))
    except PromptImportError as exc:
        fail(str(exc))
    typer.echo(f"Imported {n} prompts into set {name or file.stem!r}.")


@prompts_app.command("list")
def prompts_list() -> None:
    """List prompt sets."""
    from vibestudio.arena.prompts import list_sets

    with open_db().session() as s:
        for set_name in list_sets(s):
            typer.echo(set_name)
