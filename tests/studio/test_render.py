"""The display path (``studio.render``) on the hostile corpus and on bad input: what it outputs can load nothing,
run nothing and place nothing outside its box, whatever the text; and it never crashes."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from vibestudio.studio.render import MAX_CHARS, error_text, literal, name_html, to_html

CORPUS = Path(__file__).parents[1] / "data" / "hostile_markdown.jsonl"
BEACON = "http://127.0.0.1:9"
ALLOWED_TAGS = {
    "p", "br", "hr", "em", "strong", "s", "del", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "a", "span", "div",
}  # fmt: skip


def corpus() -> list[dict[str, str]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.problems.append(f"tag <{tag}>")
        d = dict(attrs)
        for name, value in attrs:
            if name.startswith("on") or name in (
                "style",
                "src",
                "srcset",
                "background",
                "formaction",
                "xlink:href",
            ):
                self.problems.append(f"attribute {name}={value!r} on <{tag}>")
        if tag == "a":
            href = d.get("href") or ""
            if not href.lower().startswith(("http://", "https://", "mailto:")):
                self.problems.append(f"link {href!r}")
            if d.get("rel") != "noopener noreferrer":
                self.problems.append(f"link without rel: {d}")
        elif "href" in d:
            self.problems.append(f"href on <{tag}>")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def audit(html: str) -> _Audit:
    a = _Audit()
    a.feed(html)
    a.close()
    return a


@pytest.mark.parametrize("case", corpus(), ids=lambda c: c["id"])
def test_corpus_case_renders_to_inert_html(case):
    text = case["markdown"].replace("{B}", BEACON)
    out = to_html(text)
    a = audit(out)
    assert a.problems == [], (case["id"], a.problems, out[:800])
    shown = "".join(a.text)
    # what the model wrote is there to read: its markers show as text
    if "FIXED-" in text:
        assert f"FIXED-{case['id']}" in shown, shown[:500]
    for tag in ("<img", "<iframe", "<script", "<link", "<style", "<svg", "<math"):
        assert tag not in out.lower()


def test_corpus_file_covers_the_commonmark_categories():
    ids = {c["id"].split("-")[0] for c in corpus()}
    want = {"code", "backslash", "fenced", "indented", "raw", "autolink", "link", "entity", "html"}
    assert want <= ids
    for c in corpus():
        for kind in ("img-", "frame-", "css-", "position:fixed", "js-"):
            assert kind in c["markdown"] or c["id"] in ("autolink-beacon",), (c["id"], kind)


def test_links_images_and_schemes():
    out = to_html(
        "[a](https://x.org) [b](javascript:alert(1)) [c](data:text/html,x) [d](vbscript:x) [e](/rel)"
    )
    assert out.count("<a ") == 1 and 'href="https://x.org"' in out and 'rel="noopener noreferrer"' in out
    assert "javascript:alert(1)" in out and "data:text/html" in out and "vbscript:x" in out
    img = to_html("![cat](http://127.0.0.1:9/cat.png)")
    assert "<img" not in img and "[image: cat]" in img and "http://127.0.0.1:9/cat.png" in img
    assert 'href="mailto:a@b.org"' in to_html("<a@b.org>")


def test_markdown_still_renders():
    out = to_html("# Title\n\n**bold** *em* `<code>`\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    for tag in ("<h1>", "<strong>", "<em>", "<code>&lt;code&gt;</code>", "<ul>", "<table>"):
        assert tag in out


def test_literal_keeps_every_character():
    name = "a|b <img src=x> *x* [l](javascript:1) `c` \\ # _u_"
    a = audit(to_html(f"**{literal(name)}**"))
    assert "".join(a.text).strip() == name and a.problems == []
    assert "&lt;img" in name_html(name)


@pytest.mark.parametrize(
    "text",
    [
        "".join("  " * (i % 60) + f"- item {i} *x* [a](b)\n" for i in range(40_000)),  # ~1 MB of nested lists
        "> " * 10_000 + "deep",  # 10k-deep blockquotes
        ">" * 10_000 + "deep",
        "a*b_c`d[e](f " * 16_000,  # a 200k-character line
        "[" * 200_000,
        "\ud800 lone \udfff surrogates \udbff\udc00",
        "\u202eevil\u202c \u200b\u200d\u2066 \x00\x1b\x7f",
        "",
        None,
    ],
    ids=[
        "nested-lists-1MB",
        "quotes-10k",
        "quotes-10k-nospace",
        "line-200k",
        "brackets",
        "surrogates",
        "bidi",
        "empty",
        "none",
    ],
)
def test_bad_input_renders_without_crashing(text):
    out = to_html(text)
    out.encode("utf-8")  # no lone surrogates left
    assert audit(out).problems == []
    assert len(out) < 12 * MAX_CHARS
    if not text:
        assert out == ""
        return
    assert out.startswith('<div class="vs-md') and out.endswith("</div>")
    word = re.search(r"[a-z]+", text)
    assert (word.group() if word else "[") in "".join(audit(out).text)  # the text is shown, not dropped


def test_invisible_characters_are_shown_not_obeyed():
    out = to_html("file\u202etxt.exe\u200b", strict=True)
    assert "\u202e" not in out and "⟨U+202E⟩" in out and "⟨U+200B⟩" in out
    assert "👨\u200d👩" in to_html("👨\u200d👩")  # emoji sequences keep their joiner in answers
    assert "⟨U+200D⟩" in name_html("a\u200db")  # but not in names
    assert "deep" in to_html("> " * 10_000 + "deep")  # text past the nesting limit still shows


def test_long_text_is_cut_with_a_note():
    out = to_html("x" * (MAX_CHARS + 5000))
    assert "5,000 more characters not shown" in out


def test_error_text_hides_paths_urls_keys_and_markup():
    msg = error_text(
        "failed reading /srv/studio/secrets/personas.yaml line 3 from http://10.0.0.5:8000/v1 "
        "with key sk-abcdefghijklmnopqrstu <img src=x onerror=alert(1)> api_key=hunter2"
    )
    for leak in ("/srv", "10.0.0.5", "sk-abc", "hunter2", "<img"):
        assert leak not in msg
    assert "personas.yaml line 3" in msg and "&lt;img" in msg
    upload = error_text(
        "/tmp/gradio/3f2a9c0d1e4b5a6978c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2/bomb.yaml: persona 1 ('bomb')"
    )
    assert upload == "bomb.yaml: persona 1 ('bomb')"


def test_plot_labels_carry_no_plotly_markup():
    """Plotly draws <a href>, <span style> and <br> in labels: a contestant name must reach a chart as text."""
    from vibestudio.studio.pages.leaderboard import board_chart, heatmap
    from vibestudio.studio.render import plot_label

    hostile = '<a href="http://127.0.0.1:9/x">click</a><span style="position:fixed">&amp;\u202e'
    assert "<" not in plot_label(hostile) and ">" not in plot_label(hostile)
    board = {"models": [{"name": hostile, "rating": 1000.0, "ci_low": 990.0, "ci_high": 1010.0}]}
    fig = board_chart(board)
    assert fig is not None
    assert all("<" not in str(y) for y in fig.data[0].y)
    import pandas as pd

    frame = pd.DataFrame([[0.5]], index=[hostile], columns=[hostile])
    hm = heatmap(frame, "t")
    assert hm is not None and "<" not in str(hm.data[0].x[0]) and "<" not in str(hm.data[0].y[0])
