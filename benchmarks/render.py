"""Display path cost: ``studio.render.to_html`` against a raw baseline (plain markdown-it-py, CommonMark, no
sanitizer, no guards) on a typical answer, the hostile corpus and the bad inputs of issue 10.

Prints milliseconds per render (best of ``--repeat``) for both and the ratio. The raw baseline is given the same
text cut to the display limit (it has no limit of its own and would take seconds on some of these).
Run: ``python -m benchmarks.render``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from markdown_it import MarkdownIt

from vibestudio.studio.render import MAX_CHARS, to_html

CORPUS = Path(__file__).parents[1] / "tests" / "data" / "hostile_markdown.jsonl"


def inputs() -> dict[str, str]:
    corpus = [json.loads(x)["markdown"] for x in CORPUS.read_text("utf-8").splitlines() if x.strip()]
    answer = (
        "Here is **an answer** with `code`, a [link](https://example.org) and a list:\n\n- one\n- two\n\n"
        "```python\nprint('hi')\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    ) * 20
    return {
        "typical answer (3 kB)": answer,
        "hostile corpus, one case": corpus[0],
        "hostile corpus, all cases (28 kB)": "\n\n".join(corpus),
        "1 MB nested lists": "".join("  " * (i % 60) + f"- item {i} *x* [a](b)\n" for i in range(40_000)),
        "10k-deep blockquote": "> " * 10_000 + "deep",
        "200k-character line": "a*b_c`d[e](f " * 16_000,
        "200k unclosed brackets": "[" * 200_000,
        "lone surrogates": "\ud800 x \udfff " * 10_000,
        "zero-width + bidi": "\u202e\u200b\u2066abc " * 20_000,
    }


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    raw = MarkdownIt("commonmark")
    print(f"{'input':36s} {'display path':>13s} {'raw markdown-it':>16s} {'ratio':>7s}")
    for name, text in inputs().items():
        ours = best(lambda t=text: to_html(t), args.repeat)
        cut = text[:MAX_CHARS].encode("utf-8", "replace").decode("utf-8")
        base = best(lambda t=cut: raw.render(t), args.repeat)
        print(f"{name:36s} {ours:10.1f} ms {base:13.1f} ms {ours / base:6.2f}x")


if __name__ == "__main__":
    main()
