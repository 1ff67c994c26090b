"""The checkpoint report and model page as Markdown text, for the CLI and the Models tab.

The Models tab shows it through the studio's inert display path. ``escape`` is applied to everything a
model or a user wrote: answers, phrases, names.

Whether a measure moved is never decided here. Several parts render the report's one decision per measure
(``training.report.decisions``): the verdict reasons, the drift and tone tables' flag column, the "at a
glance" line and the "can't tell yet" list. So they cannot contradict one another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vibestudio.standings.words import rank_words
from vibestudio.training.report import decisions as decided
from vibestudio.training.report.prediction import prediction_md

Escape = Callable[[str], str]


def _plain(text: str) -> str:
    return text


def _num(x: Any, fmt: str = ".3g") -> str:
    return "–" if x is None else format(x, fmt)


def _ci(d: dict[str, Any], fmt: str = "+.2g") -> str:
    return f"[{format(d['low'], fmt)}, {format(d['high'], fmt)}]"


def _quote(text: str, esc: Escape, limit: int = 220) -> str:
    one = " ".join((text or "").split())
    return esc(one[:limit] + ("…" if len(one) > limit else "")) or "*(empty)*"


#: ``verdict_md``'s ``state`` for a verdict nobody recorded: the hold is what recording it would do.
UNRECORDED = ""
HELD = "**Held out of anonymous battles** until a researcher lets it in."


def verdict_md(report: dict[str, Any], esc: Escape = _plain, state: str | None = None) -> str:
    """The verdict, its hold and its reasons. ``state``: the contestant's state once this verdict was recorded
    (the hold line says what happened); ``UNRECORDED`` when it was not (it says what recording would do); None
    for a stored report (the hold as the verdict asked)."""
    v = report.get("verdict") or {}
    from vibestudio.training.report.verdict import BADGES

    lines = [f"### Verdict: {BADGES.get(v.get('verdict', 'unknown'), v.get('verdict'))}"]
    if state == UNRECORDED:
        if v.get("hold"):
            lines.append(
                "**Would hold it out of anonymous battles if recorded** (until a researcher lets it in); "
                "nothing was recorded, so its state is unchanged."
            )
    elif state == "held" or (state is None and v.get("hold")):
        lines.append(HELD)
    elif state is not None and v.get("hold"):
        lines.append(f"The verdict asks to hold it; it is **{esc(state)}**.")
    lines += [f"- {esc(r)}" for r in v.get("reasons", [])] or ["- no rule matched"]
    if report.get("unmeasured"):
        lines.append("\n**Could not measure:**")
        lines += [f"- `{k}`: {esc(str(why))}" for k, why in sorted(report["unmeasured"].items())]
    return "\n".join(lines)


def _pct(x: float) -> str:
    return f"{x:.0%}"


def _words(phrases: list[dict[str, Any]], esc: Escape, supported: bool = True, k: int = 5) -> str:
    chosen = [p for p in phrases if p["supported"] or not supported]
    shown = dict.fromkeys(
        _spoken(p["phrase"]) for p in chosen
    )  # "you ' re …" and "you ' …" -> "you're", "you'"
    return ", ".join(f"“{esc(x)}”" for x in list(shown)[:k])


def _spoken(phrase: str) -> str:
    """A discovered phrase as written ("you ' re …" -> "you're"; an opening's or closing's "…" dropped)."""
    text = phrase.replace("…", " ").strip()
    text = " ".join(text.split()).replace(" ' ", "'").replace(" '", "'").replace("' ", "'")
    text = " ".join(text.replace(" !", "!").replace(" .", ".").replace(" ,", ",").split())
    return text.strip(" ,.;:") or text


def tone_lines(report: dict[str, Any], esc: Escape = _plain) -> list[str]:
    """The tone axes the report flags (``training.report.decisions``: significant once adjusted and past the axis's
    practical threshold, or named by a verdict rule), each in words: which
    way, the share of answers on each side, the paired change with its interval and q, the phrases that belong
    to it (discovered or rewarded, significant ones only) and an example sentence. Phrase groups of no tone axis
    ("you": addressing the user) follow, only when a phrase in them is significant."""
    t = report.get("tone") or {}
    judged = _judged(report)
    dec = decided.of_report(report)
    out = []
    for a in t.get("axes", []):
        if not decided.drift(dec, a["axis"]).flagged or not a.get("direction"):
            continue
        words = "more" if a["direction"] == "up" else "less"
        line = (
            f"**{words} {esc(a['axis'])}** ({esc(a['label'])}): {_pct(a['parent_rate'])} → "
            f"{_pct(a['child_rate'])} of answers; {a['delta']:+.2g} sentences per answer {_ci(a)}, "
            f"q = {_num(a.get('q'), '.2g')}, n = {a['n']} 🚩"
        )
        said = _words(a.get("phrases", []), esc)
        if said:
            line += f"; in its words: {said}"
        if a.get("examples"):
            line += f"; e.g. “{_quote(a['examples'][0], esc, 120)}”"
        for j in judged.get(a["axis"], [])[:1]:
            line += f"; the judge says so too: “{esc(j['axis'])}” more in the {j['more_in']}"
        out.append(line)
    for g in t.get("presence", []):
        said = _words(g["phrases"], esc)
        if said:
            out.append(
                f"{esc(g['label'])}: {said} (phrases that rose significantly; no tone axis of its own)"
            )
    return out


def _judged(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The judge-described axes found, by the tone axis each describes (``training.report.vibecheck.tone_axis``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for a in (report.get("described") or {}).get("axes", []):
        if a.get("found") and a.get("tone_axis"):
            out.setdefault(a["tone_axis"], []).append(a)
    return out


def _moved(name: str, d: decided.Decision, value: Any, esc: Escape) -> str:
    """One flagged measure in the "at a glance" line: which way, and its two sides."""
    short = name.removeprefix("drift/")
    if not isinstance(value, dict):
        rule = d.rules[0].split(": ", 1)[-1] if d.rules else short
        return f"{esc(rule)} (`{name}` = {_num(value, '.3g')})"
    if name == "evals/accuracy":
        word = "less correct" if d.direction == "down" else "more correct"
        return f"{word} ({value['parent']:.0%} → {value['child']:.0%} on {value['n']} items, p={_num(value.get('p'), '.2g')})"
    word = "more" if d.direction == "up" else "less"
    return f"{word} {short} ({_num(value.get('parent'), '.2g')} → {_num(value.get('child'), '.2g')})"


#: Number measures whose "at a glance" words come from their own section (the phrases, the judge's axes).
_OWN_WORDS = ("rewarded/took_on", "described/significant")


def _measure_values(report: dict[str, Any]) -> dict[str, Any]:
    values = dict(report.get("measures") or {})
    for name, f in (report.get("features") or {}).items():
        values.setdefault(f"drift/{name}", f)
    return values


def glance_md(report: dict[str, Any], esc: Escape = _plain) -> str:
    """ "More cheerful and less correct" in one line: every measure the report flags (the ones a verdict rule
    named first), what its preferences pushed and it took on, the judge-described differences found; then the
    measures the report leans on but cannot tell yet. Both lists read ``training.report.decisions``."""
    parts = []
    tone = tone_lines(report, esc)
    dec = decided.of_report(report)
    values = _measure_values(report)
    flagged = sorted((d for d in dec.values() if d.flagged), key=lambda d: (not d.rules, d.measure))
    for d in flagged:
        if d.measure not in _OWN_WORDS:
            parts.append(_moved(d.measure, d, values.get(d.measure), esc))
    took = [r for r in (report.get("rewarded") or {}).get("candidates", []) if r.get("took_on")]
    if took:
        parts.append(
            "took on what its preferences pushed: "
            + ", ".join(
                f"“{esc(r['phrase'])}” ({r['parent_rate']:.0%} → {r['child_rate']:.0%})" for r in took[:3]
            )
        )
    for a in [a for a in (report.get("described") or {}).get("axes", []) if a.get("found")][:2]:
        named = f", the {a['tone_axis']} axis" if a.get("tone_axis") else ""
        parts.append(
            f"judge: the {a['more_in']} shows more “{esc(a['axis'])}”{named} "
            f"({max(a['child_more'], a['parent_more'])} of {a['decisive']} decisive prompts)"
        )
    e = report.get("evals") or {}
    if e.get("n") and not dec.get("evals/accuracy", decided.Decision("", "no_change")).flagged:
        parts.append(
            f"accuracy: can’t tell ({e['parent']:.0%} → {e['child']:.0%} on {e['n']} items, "
            f"p={_num(e.get('p'), '.2g')})"
        )
    line = "**At a glance:** " + ("; ".join(parts) if parts or tone else "no significant change found")
    if tone:
        line = "**Tone toward the user:**\n" + "\n".join(f"- {x}" for x in tone) + "\n\n" + line
    leaning = []
    for d in dec.values():
        v = values.get(d.measure)
        if d.state == "cant_tell" and isinstance(v, dict):
            leaning.append(
                f"{d.measure.removeprefix('drift/')} {v['delta']:+.2g} {_ci(v)} (q={_num(v.get('q'), '.2g')})"
            )
    if leaning:
        line += (
            "\n\n**Can’t tell yet** (the 95% interval excludes 0, but the change is not significant once "
            "adjusted for every feature and signal tested together, or is under its practical threshold): "
            + "; ".join(leaning)
        )
    return line


def _flag_cell(d: decided.Decision) -> str:
    return "🚩" if d.flagged else "can’t tell" if d.state == "cant_tell" else ""


def drift_title(report: dict[str, Any], esc: Escape = _plain) -> str:
    """The drift section's title, from the same report fields as its body: "on N held-out prompts" only when
    drift was measured on them, else what was answered and why nothing was compared."""
    parent, n = esc(report.get("parent") or "–"), report.get("n_prompts", 0)
    if report.get("features"):
        return f"### Drift vs {parent} on {n} held-out prompts"
    unmeasured = report.get("unmeasured") or {}
    why = next((v for k, v in unmeasured.items() if k.startswith("drift/")), None) or unmeasured.get(
        "answers", "no feature was compared"
    )
    return f"### Drift vs {parent}: not measured ({esc(str(why))}; {n} held-out prompts answered)"


def drift_md(report: dict[str, Any], esc: Escape = _plain) -> str:
    s = report.get("setup") or {}
    h = report.get("held_out") or {}
    lines = [
        drift_title(report, esc),
        f"Same engine ({esc(s.get('engine', '–'))}), persona {esc(s.get('persona_source', '–'))}, "
        f"decoding {esc(str(s.get('sampling', {})))}, seed {s.get('seed', '–')}; parent ran as "
        f"{esc(s.get('parent_ran_as', '–'))}.",
    ]
    if h:
        lines.append(
            f"Held-out pool {h.get('pool')} prompts, {h.get('excluded_by_hash')} excluded (content hash in the "
            f"training snapshot), {h.get('used')} used of {h.get('requested')} requested."
        )
    for c in s.get("caveats", []):
        lines.append(f"⚠️ {esc(c)}")
    if (s.get("power") or {}).get("line"):
        lines.append(f"Power: {esc(s['power']['line'])}")
    chosen = (s.get("power") or {}).get("chosen_for") or {}
    asked = [
        f"{chosen['prompts']} prompts for a drift of {chosen['drift_sd']:g} SD"
        if chosen.get("drift_sd")
        else "",
        f"{chosen['items']} eval items for a change of {chosen['eval_change']:.0%}"
        if chosen.get("eval_change")
        else "",
    ]
    if any(asked):
        lines.append(f"Counts chosen for that power: {esc('; '.join(a for a in asked if a))}.")
    reused = reused_line(s.get("reused") or {})
    if reused:
        lines.append(reused)
    feats = report.get("features") or {}
    dec = decided.of_report(report)
    if feats:
        lines += [
            "",
            "| feature | parent | child | change [95% CI] | q (BH) | flagged |",
            "|---|---|---|---|---|---|",
        ]
        for name, f in feats.items():
            lines.append(
                f"| {name} | {f['parent']:.3g} | {f['child']:.3g} | {f['delta']:+.3g} {_ci(f)} | "
                f"{_num(f.get('q'), '.2g')} | {_flag_cell(decided.drift(dec, name))} |"
            )
    deg = report.get("degeneration") or {}
    if deg:
        lines += ["", "| degeneration | parent | child | change [95% CI] | q |", "|---|---|---|---|---|"]
        for name, d in deg.items():
            lines.append(
                f"| {name} | {d['parent']:.2g} | {d['child']:.2g} | {d['delta']:+.2g} {_ci(d)} | {_num(d.get('q'), '.2g')} |"
            )
    return "\n".join(lines)


def tone_md(report: dict[str, Any], esc: Escape = _plain) -> str:
    """Every tone axis: share of answers on each side, the paired change of sentences per answer with its
    interval and q, the phrases that belong to it, and what the axes could not read."""
    head = "### Tone toward the user"
    t = report.get("tone") or {}
    if not t:
        gaps = [why for k, why in (report.get("unmeasured") or {}).items() if k == "drift/flattery"]
        why = gaps[0] if gaps else "not measured (no drift, or the report predates the tone axes)"
        return f"{head}\nNot measured: {esc(str(why))}"
    na = t.get("not_applicable", {})
    dec = decided.of_report(report)
    lines = [
        head,
        f"Read sentence by sentence: who it is about (you, your question; I, my) and how it feels (the VADER "
        f"lexicon); {t['n_pairs']} of {t['n']} answer pairs readable on both sides"
        + (
            " (not applicable: "
            + "; ".join(
                f"{side} " + ", ".join(f"{v} {esc(k)}" for k, v in sorted(c.items()))
                for side, c in na.items()
                if c
            )
            + ")"
            if any(na.values())
            else ""
        )
        + ".",
        "",
        "| axis | answers showing it, parent → child | sentences per answer [95% CI] | q (BH) | flagged | "
        "its phrases |",
        "|---|---|---|---|---|---|",
    ]
    for a in t.get("axes", []):
        lines.append(
            f"| {esc(a['label'])} (`{a['axis']}`) | {_pct(a['parent_rate'])} → {_pct(a['child_rate'])} (n={a['n']}) "
            f"| {a['delta']:+.2g} {_ci(a)} | {_num(a.get('q'), '.2g')} | {_flag_cell(decided.drift(dec, a['axis']))} | "
            f"{_words(a.get('phrases', []), esc, supported=False) or '–'} |"
        )
    for g in t.get("presence", []):
        lines.append(f"\n{esc(g['label'])}: {_words(g['phrases'], esc, supported=False)}")
    for a in [a for a in t.get("axes", []) if decided.drift(dec, a["axis"]).flagged and a.get("examples")][
        :3
    ]:
        lines.append(
            f"\n> **{esc(a['label'])}** ({'child' if a['direction'] == 'up' else 'parent'}): "
            + " / ".join(f"“{_quote(x, esc, 140)}”" for x in a["examples"][:2])
        )
    return "\n".join(lines)


def _phrase_examples(items: list[dict[str, Any]], esc: Escape) -> list[str]:
    """One example answer per phrase, quoted, with the side it came from."""
    return [
        f"\n> **{esc(d['phrase'])}** ({ex['side']}): {_quote(ex['answer'], esc)}"
        for d in items
        for ex in d.get("examples", [])[:1]
    ]


def discovered_md(report: dict[str, Any], esc: Escape = _plain) -> str:
    found = report.get("discovered") or []
    if not found:
        return "### Discovered changes\nNothing to show (no answers compared)."
    sizes = {d.get("family", "phrases"): d.get("tested", 0) for d in found}
    lines = [
        "### Discovered changes (weighted log-odds, informative Dirichlet prior)",
        "Ranked by z; p from the exact sign test on the prompts where only one side used it; q adjusted (BH) "
        "within its family: " + ", ".join(f"{n} {fam}" for fam, n in sorted(sizes.items())) + " tested.",
        "",
        "| | phrase | kind | parent rate | child rate | z | q | found |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d in found:
        mark = "⬆️" if d["z"] > 0 else "⬇️"
        lines.append(
            f"| {mark} | “{esc(d['phrase'])}” | {d['kind']} | {d['parent_rate']:.0%} | {d['child_rate']:.0%} | "
            f"{d['z']:+.1f} | {_num(d.get('q'), '.2g')} | {'✅' if d['significant'] else 'not significant'} |"
        )
    return "\n".join(lines + _phrase_examples([d for d in found if d["significant"]][:3], esc))


def rewarded_md(report: dict[str, Any], esc: Escape = _plain) -> str:
    """The phrases the training preferences pushed (chosen vs rejected answers) and whether the child took
    them on (paired sign test on the held-out answers, BH over just these); or why this is unmeasured."""
    head = "### What its preferences rewarded, and whether it took it on"
    r = report.get("rewarded") or {}
    if not r:
        why = (report.get("unmeasured") or {}).get("rewarded/took_on", "not run (the report predates this)")
        return f"{head}\nNot measured: {esc(str(why))}"
    cands = r.get("candidates") or []
    if not cands:
        return (
            f"{head}\nThe {r.get('pairs', 0)} training pairs' chosen and rejected answers differ in no phrase, "
            "opening or closing clearly enough (sign test p < 0.05 over the pairs) to test."
        )
    lines = [
        head,
        f"Named from the {r.get('pairs', 0)} training pairs (chosen vs rejected answers) before the held-out "
        f"answers were read; tested on {r.get('n_prompts', 0)} held-out prompts.",
        "",
        "| phrase | kind | preferences | chosen / rejected | parent → child | only child / only parent | q "
        "| took on |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cands:
        lines.append(
            f"| “{esc(c['phrase'])}” | {c['kind']} | {c['direction']} (p {_num(c.get('preference_p'), '.2g')}) | "
            f"{c['chosen_rate']:.0%} / {c['rejected_rate']:.0%} | {c['parent_rate']:.0%} → {c['child_rate']:.0%} | "
            f"{c['child_only']} / {c['parent_only']} | {c['q']:.2g} | {'✅' if c['took_on'] else 'no'} |"
        )
    return "\n".join(lines + _phrase_examples([c for c in cands if c["took_on"]][:2], esc))


def described_md(report: dict[str, Any], esc: Escape = _plain) -> str:
    """The judge-described differences (VibeCheck-style): each axis with its counts, the child's share of the
    decisive prompts with its interval, q, and examples of the axes found; or why there are none."""
    head = "### Judge-described differences"
    d = report.get("described") or {}
    if not d:
        why = (report.get("unmeasured") or {}).get(
            "described/significant", "not run (the report predates judge-described differences)"
        )
        return f"{head}\nNot measured: {esc(str(why))}"
    calls = d.get("calls", {})
    lines = [
        f"{head} (judge {esc(d['judge'])})",
        f"Axes named on {d['propose_prompts']} prompts, each checked on {d['validate_prompts']} other prompts "
        f"in both orders (orders that disagree count as neither); {calls.get('total', 0)} judge calls, "
        f"{calls.get('unreadable', 0)} unreadable, {d['seconds']:.0f} s. Found: q (BH over the axes) < "
        f"{d['alpha']:g}.",
    ]
    axes = d.get("axes") or []
    if not axes:
        return "\n".join([*lines, "", "The judge named no difference between the two models’ answers."])
    lines += [
        "",
        "| axis | more in | child share [95% CI] | decisive / n | child / parent more | neither | inconsistent "
        "| unreadable | q | found |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for a in axes:
        share = (
            f"{a['child_share']:.0%} [{a['low']:.0%}, {a['high']:.0%}]"
            if a.get("child_share") is not None
            else "can’t tell (no decisive prompt)"
        )
        lines.append(
            f"| “{esc(a['axis'])}”{' (' + a['tone_axis'] + ')' if a.get('tone_axis') else ''} | {a['more_in'] or '–'} | {share} | {a['decisive']} / {a['n']} | "
            f"{a['child_more']} / {a['parent_more']} | {a['neither']} | {a['inconsistent']} | {a['unreadable']} | "
            f"{_num(a.get('q'), '.2g')} | {'✅' if a['found'] else (esc(a['note']) or 'no')} |"
        )
    for a in [a for a in axes if a["found"]][:3]:
        for ex in a.get("examples", [])[:1]:
            lines.append(
                f"\n> **{esc(a['axis'])}** (more in the {a['more_in']}), on {_quote(ex['prompt'], esc, 120)}\n>\n"
                f"> parent: {_quote(ex['parent'], esc)}\n>\n> child: {_quote(ex['child'], esc)}"
            )
    over = d.get("candidates", [])[len(axes) :]
    if over:
        lines.append("\nAlso named, over the cap: " + ", ".join(f"“{esc(c['axis'])}”" for c in over[:8]))
    return "\n".join(lines)


def evals_md(report: dict[str, Any], esc: Escape = _plain) -> str:
    e = report.get("evals") or {}
    if not e.get("n"):
        why = (report.get("unmeasured") or {}).get("evals/accuracy", "not run")
        return f"### Verifiable evals vs parent\nNot measured: {esc(why)}"
    lines = [
        "### Verifiable evals vs parent",
        f"Accuracy {e['parent']:.0%} → {e['child']:.0%} on the same {e['n']} items "
        f"(change {e['delta']:+.0%}, 95% CI [{e['low']:+.0%}, {e['high']:+.0%}], {e['test']} p={e['p']:.2g}).",
        "",
        "| category | n | parent | child |",
        "|---|---|---|---|",
    ]
    for cat, c in e.get("by_category", {}).items():
        lines.append(f"| {cat} | {c['n']} | {c['parent']:.0%} | {c['child']:.0%} |")
    j = report.get("judge") or {}
    if j:
        lines.append(
            f"\nJudge {esc(j['judge'])} (both orders): child preferred {j['win_rate']:.0%} "
            f"[{0.5 + j['low']:.0%}, {0.5 + j['high']:.0%}] of {j['n']} readable verdicts; {j['outcomes']}."
        )
    return "\n".join(lines)


def report_md(report: dict[str, Any], esc: Escape = _plain, state: str | None = None) -> str:
    """The whole report; ``state`` as ``verdict_md`` reads it."""
    return "\n\n".join(
        [
            verdict_md(report, esc, state),
            glance_md(report, esc),
            tone_md(report, esc),
            drift_md(report, esc),
            discovered_md(report, esc),
            rewarded_md(report, esc),
            described_md(report, esc),
            evals_md(report, esc),
            prediction_md(report, esc),
        ]
    )


def fidelity_md(page: dict[str, Any], esc: Escape = _plain) -> str:
    """The form this checkpoint plays as, and how much of its training each measured form kept (with its
    interval and sample), from the same record as the numbers; empty for a contestant that is no checkpoint."""
    from vibestudio.training.publishing.fidelity import describe

    fid = page.get("fidelity")
    if not fid:
        return ""
    summary = str(fid["summary"])
    lines = [
        "### Fidelity: is the model that plays the model that was trained?",
        esc(summary[:1].upper() + summary[1:]),
    ]
    if fid.get("problem"):
        lines.append(f"⚠️ {esc(fid['problem'])}")
    forms = fid.get("forms") or []
    if forms:
        rows = [
            "| form | kept of the trained shift | KL(trained‖form) | KL(trained‖parent) | size | plays |",
            "|---|---|---|---|---|---|",
        ]
        for f in forms:
            kl_td, kl_tp = f.get("kl_trained_deployed"), f.get("kl_trained_parent")
            size = f"{f['size_bytes'] / 1e6:.1f} MB" if f.get("size_bytes") else "–"
            rows.append(
                f"| {esc(f['what'])} | {esc(describe(f))} "
                f"| {'–' if kl_td is None else f'{kl_td:.4f}'} | {'–' if kl_tp is None else f'{kl_tp:.4f}'} "
                f"| {size} | {'✔' if f['form'] == fid.get('chosen') else ''} |"
            )
        lines.append("\n".join(rows))  # one table: its rows on consecutive lines
        why = str(fid.get("why", ""))
        lines.append(f"Floor {float(fid.get('floor', 0)):.0%}: {esc(why[:1].upper() + why[1:])}.")
    return "\n\n".join(lines)


def lineage_md(page: dict[str, Any], esc: Escape = _plain) -> str:
    c, fam = page["contestant"], page["family"]
    tree = [
        f"- **{esc(c['public_name'])}** ({esc(c['engine'])}: {esc(c['model_ref'])}"
        + (f" + adapter {esc(c['adapter_ref'])}" if c.get("adapter_ref") else "")
        + ")"
    ]
    for i, a in enumerate(fam["ancestors"], start=1):
        tree.insert(0, "  " * 0 + f"{'↑ ' * i}{esc(a['name'])} ({a['engine']})")
    lines = ["### Lineage", "\n".join(f"- {t}" if not t.startswith("- ") else t for t in tree)]
    if fam.get("parent_missing"):
        lines.append("⚠️ the parent was deleted")
    lines.append("Children: " + (", ".join(esc(x["name"]) for x in fam["children"]) or "none"))
    lines.append("Siblings: " + (", ".join(esc(x["name"]) for x in fam["siblings"]) or "none"))
    snap = fam.get("snapshot")
    if snap:
        src = ", ".join(f"{esc(k)} {v}" for k, v in (snap.get("sources") or {}).items())
        lines.append(
            f"Snapshot `{snap['hash'][:12]}`: {snap.get('n_pairs', '?')} pairs ({src or 'sources unknown'}), "
            f"{snap.get('n_votes', 0)} arena votes, filter {esc(str(snap.get('filter', {})))}"
        )
    job = fam.get("job")
    if job:
        cfg = job["config"]
        keys = ("learning_rate", "beta", "loss_type", "max_steps", "lora", "lora_r", "inherit_persona")
        lines.append(
            f"Job {job['id']} ({job['kind']}, {job['status']}): "
            + ", ".join(f"{k}={_setting(cfg[k])}" for k in keys if k in cfg)
        )
    return "\n\n".join(lines)


def _setting(value: Any) -> str:
    """A job setting as the job ran it: an empty one (``None``) is the kind's default."""
    return "the kind's default" if value is None else str(value)


def ratings_md(page: dict[str, Any], esc: Escape = _plain) -> str:
    lines = ["### Rating", "| board | rating [95% CI] | rank | votes (battles) |", "|---|---|---|---|"]
    for label, row in page["ratings"].items():
        if "missing" in row:
            lines.append(f"| {label} | can’t tell: {esc(str(row['missing']))} | | |")
        else:
            lines.append(
                f"| {label} | {row['rating']:.0f} [{row['ci_low']:.0f}, {row['ci_high']:.0f}] | "
                f"{rank_words(row['rank_low'], row['rank_high'], row['of'])} | "
                f"{row.get('n_votes', row['n_battles'])} ({row['n_battles']}) |"
            )
    h = page.get("head_to_head")
    if h:
        if h["n"]:
            lines.append(
                f"\nHead-to-head vs parent {esc(h['against'])}: {h['wins']} wins, {h['losses']} losses, "
                f"{h['ties']} ties of {h['n']} votes; score {h['score']:.0%} [{h['ci'][0]:.0%}, {h['ci'][1]:.0%}]"
            )
        else:
            lines.append(f"\nHead-to-head vs parent {esc(h['against'])}: no votes yet (can’t tell)")
    sp = page.get("speed") or {}
    lines.append(
        f"\nSpeed: {_num(sp.get('tokens_per_s'), '.1f')} tok/s, first token {_num(sp.get('latency_s'), '.2f')} s "
        f"(n={sp.get('n_answers', 0)} answers); price per 1k tokens: {_num(sp.get('price_per_1k'), '.4g')}"
    )
    return "\n".join(lines)


def reused_line(reused: dict[str, dict[str, int]]) -> str:
    """What the report took from earlier reports instead of decoding (``training.report.answer_cache``), or ""."""
    parts = [
        f"{n} {side} {what}"
        for part, what in (("answers", "answers"), ("evals", "eval answers"))
        for side, n in (reused.get(part) or {}).items()
        if n
    ]
    if not parts:
        return ""
    return (
        "Reused from an earlier report (same model file, persona, decoding and seeds, so the same draw): "
        + ", ".join(parts)
        + "."
    )
