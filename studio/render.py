"""The one display path for untrusted text: Markdown -> HTML with a real CommonMark parser, then a sanitizer.

Untrusted text is anything a model, a user, an import file, a judge or a persona file wrote. It reaches a
page only as the HTML this module returns. The page shows that as HTML: ``gr.HTML``, or ``gr.Chatbot``
with ``render_markdown=False``. So Gradio's own Markdown renderer never sees the text.

1. ``clean_text``. Lone UTF-16 surrogates become U+FFFD. Bidi overrides, zero-width characters and other
   control characters become a visible ``⟨U+202E⟩`` marker: shown, never obeyed. Text past ``MAX_CHARS``
   is cut, with a note saying how much is not shown. The stored text is untouched.
2. ``markdown-it-py`` (CommonMark, plus GFM tables and strikethrough) with raw HTML off. A ``<script>`` or
   ``<img>`` in the text is text. Images become an inert "[image: alt] url" label that loads nothing.
   Links and autolinks parse only for ``http``, ``https`` and ``mailto``. Anything else stays as the
   characters written: ``javascript:``, ``data:``, ``vbscript:``, relative paths. Links open in a new tab
   with ``rel="noopener noreferrer"``. Nesting deeper than ``MAX_NESTING`` is shown flattened, not
   dropped.
3. ``nh3`` (the Rust sanitizer ammonia) on the output, with an allow-list of the tags and attributes step
   2 can produce. It is a second wall if a parser rule ever lets something through.

``sanitize_html`` is the last step for every ``gr.HTML`` value in the app. ``studio.app`` wraps each HTML
component's output with it. So even a handler that forgot ``to_html`` shows no markup it did not allow.

Helpers that keep numbers and words together on every page:
- ``counted`` (from ``standings.words``: "1 vote", "2 votes");
- ``interval_text``: "[677, 1254]", or "can't tell: the reason" for an interval the board marked
  ``cant_tell``;
- ``count`` and ``noun``: the same rule, for pages, so a number and its word agree.
``literal`` makes untrusted text (a contestant name, a cell) a Markdown literal. It can then sit inside a
Markdown template that ``to_html`` renders. ``error_text`` is the plain-text path for error toasts.

Why these libraries? markdown-it-py is the CommonMark reference port that Gradio itself depends on. nh3 is
the maintained binding of ammonia; Bleach, the older Python sanitizer, is deprecated. Escaping by regular
expressions, which this module replaced, cannot know where a parser will see code spans and HTML.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML

from vibestudio.standings.words import agreeing, counted, percent

__all__ = [
    "counted",
    "percent",
    "interval_text",
    "clean_text",
    "to_html",
    "sanitize_html",
    "literal",
    "name_html",
    "error_text",
    "plot_label",
]

log = logging.getLogger(__name__)

#: Text longer than this is cut for display (the stored text is untouched); keeps one render bounded.
MAX_CHARS = 100_000
#: Under an answer that stopped at its length limit (Arena and Label tabs), without the limit itself, which could
#: hint at which persona wrote it.
CUT_NOTE = "*[cut off: the answer reached its length limit]*"
#: Longer text is shown as plain text (escaped, line breaks kept) instead of being parsed as Markdown: a
#: pure-Python parser has inputs (long runs of ``[``, ``*``) whose cost grows faster than their length.
MARKDOWN_CHARS = 16_000
#: More ``[`` than this and they all show literally (no links): unclosed brackets are the parser's worst case.
MAX_BRACKETS = 1_000
#: Deeper block nesting (quotes in lists in quotes...) than this renders as text instead of more levels.
MAX_NESTING = 20
SCHEMES = ("http:", "https:", "mailto:")
REL = "noopener noreferrer"

# Characters that change how text around them reads without being seen: bidi embeddings, overrides and
# isolates, zero-width spaces and joiners, the BOM, and C0/C1 controls (tab and newline excepted).
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_ZERO_WIDTH = "\u180e\u200b\u2060-\u2064\ufeff"
_JOINERS = "\u200c\u200d"  # legitimate inside emoji sequences and many scripts: shown only in names/prompts
_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
_SURROGATE = re.compile("[\ud800-\udfff]")


def _markers(*classes: str) -> dict[int, str]:
    """A ``str.translate`` table: each character of the regex character classes -> its visible marker."""
    found = re.compile(f"[{''.join(classes)}]")
    return {c: f"⟨U+{c:04X}⟩" for c in range(0x3000) if found.match(chr(c))} | {0xFEFF: "⟨U+FEFF⟩"}


_HIDDEN = _markers(_BIDI, _ZERO_WIDTH, _CONTROLS)
_HIDDEN_STRICT = _markers(_BIDI, _ZERO_WIDTH, _JOINERS, _CONTROLS)
_DEEP = re.compile(r"(?m)^([ \t]*(?:[>*+-][ \t]*){" + str(MAX_NESTING // 2) + r"})((?:[>*+-][ \t]*)+)")
_MD_PUNCT = re.compile(r"([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")

_TAGS = {
    "p", "br", "hr", "em", "strong", "s", "del", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "a", "span", "div",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title", "target", "download"}, "ol": {"start"}, "span": {"title"}}
_CLASSES = {"span": {"vs-image"}, "div": {"vs-md", "vs-plain"}}


def clean_text(text: Any, strict: bool = False, limit: int = MAX_CHARS) -> str:
    """``text`` as a str that is safe to parse and honest to show: no lone surrogates, invisible characters
    shown as ``⟨U+XXXX⟩`` (``strict``: zero-width joiners too, for names and prompts), at most ``limit`` chars."""
    s = "" if text is None else str(text)
    cut = len(s) - limit if len(s) > limit else 0
    if cut:
        s = s[:limit]
    s = _SURROGATE.sub("\ufffd", s)
    s = s.translate(_HIDDEN_STRICT if strict else _HIDDEN)
    if cut:
        s += f"\n\n⟨{cut:,} more characters not shown⟩"
    return s


def _valid_link(url: str) -> bool:
    return url.strip().lower().startswith(SCHEMES)


def _image(self: Any, tokens: Sequence[Any], idx: int, options: Any, env: Any) -> str:
    """An image as a label that loads nothing: the alt text and the address, both as text."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    src = token.attrGet("src") or ""
    label = f"[image: {alt}]" if alt else "[image]"
    return (
        f'<span class="vs-image" title="image not loaded">{escapeHtml(label)} {escapeHtml(str(src))}</span>'
    )


def _link_open(self: Any, tokens: Sequence[Any], idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("target", "_blank")
    tokens[idx].attrSet("rel", REL)
    return str(self.renderToken(tokens, idx, options, env))


def _fence(self: Any, tokens: Sequence[Any], idx: int, options: Any, env: Any) -> str:
    """A fenced code block; its info string (the text after the opening fence) is shown above it as code."""
    info = tokens[idx].info.strip()
    tokens[idx].info = ""
    head = f"<p><code>{escapeHtml(info)}</code></p>\n" if info else ""
    return head + str(RendererHTML.fence(self, tokens, idx, options, env))


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.options["maxNesting"] = MAX_NESTING
    md.validateLink = _valid_link  # type: ignore[method-assign]
    md.add_render_rule("image", _image)
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("fence", _fence)
    return md


_MD = _parser()


def _sanitize(fragment: str) -> str:
    return nh3.clean(
        fragment,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        allowed_classes=_CLASSES,
        url_schemes={"http", "https", "mailto"},
        link_rel=REL,
        strip_comments=True,
    )


def sanitize_html(fragment: Any) -> Any:
    """HTML about to be shown (a ``gr.HTML`` value) passed through the sanitizer with this module's allow-list:
    idempotent on what ``to_html`` returns, and a wall for any value that did not come from it (markup then
    loses its scripts, event attributes, styles and foreign tags). Non-strings pass unchanged."""
    return _sanitize(fragment) if isinstance(fragment, str) and fragment else fragment


def _flatten_deep(text: str) -> str:
    """Break runs of block markers deeper than the parser's nesting limit so the text past them still shows
    (markdown-it stops a block it cannot nest further): the extra ``>``/list markers become literal text."""
    return _DEEP.sub(lambda m: m.group(1) + _MD_PUNCT.sub(r"\\\1", m.group(2)), text)


def to_html(text: Any, strict: bool = False, limit: int = MAX_CHARS) -> str:
    """Untrusted Markdown as sanitized HTML, wrapped in ``<div class="vs-md">`` (``strict`` for prompts and
    names: zero-width joiners shown too). Never raises on any str; empty text gives ''."""
    s = clean_text(text, strict=strict, limit=limit)
    if not s.strip():
        return ""
    if len(s) > MARKDOWN_CHARS:
        return _plain(s)
    if s.count("[") > MAX_BRACKETS:
        s = s.replace("[", "\\[")
    try:
        body = _MD.render(_flatten_deep(s))
    except Exception:  # a parser bug must not take the page down: show the text, escaped, instead
        log.exception("markdown rendering failed; showing the text escaped")
        return _plain(s)
    return _sanitize(f'<div class="vs-md">{body}</div>')


def _plain(s: str) -> str:
    """Text shown as it was written: escaped, in a block that keeps its line breaks (CSS ``pre-wrap``)."""
    return _sanitize(f'<div class="vs-md vs-plain">{escapeHtml(s)}</div>')


def literal(text: Any, strict: bool = True, limit: int = 500) -> str:
    """Untrusted text as a Markdown literal (every ASCII punctuation backslash-escaped, one line), to put a
    name or a cell inside a Markdown template rendered by ``to_html``."""
    s = clean_text(text, strict=strict, limit=limit).replace("\r", " ").replace("\n", " ")
    return _MD_PUNCT.sub(r"\\\1", s)


def name_html(text: Any, limit: int = 200) -> str:
    """A short untrusted string (a user or contestant name) as escaped inline HTML, invisible characters shown."""
    return html.escape(clean_text(text, strict=True, limit=limit).replace("\n", " "))


_PATH = re.compile(r"(?<![\w:/.])(?:/[\w.@+-]+){2,}/?|[A-Za-z]:\\[^\s'\"]+")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+", re.I)
_SECRET = re.compile(
    r"\b(?:sk|pk|rk|hf|ghp|gho|xox[abp])[-_][A-Za-z0-9_-]{8,}|\b[A-Za-z0-9+_-]{32,}={0,2}"
    r"|(?i:(?:api[_-]?key|token|password|secret|authorization)\s*[=:]\s*\S+)"
)


def error_text(message: Any, limit: int = 400) -> str:
    """An error message safe to show: no file paths (basename only), URLs, key-like strings or HTML; one
    paragraph of plain text, escaped for Gradio's toast (which renders HTML). Log the full error first."""
    s = clean_text(message, strict=True, limit=limit)
    s = _URL.sub("[address hidden]", s)
    s = _PATH.sub(lambda m: m.group().rstrip("/").rsplit("/", 1)[-1].rsplit("\\", 1)[-1], s)
    s = _SECRET.sub("[secret hidden]", s)
    return html.escape(" ".join(s.split()), quote=False)


def plot_label(text: Any, limit: int = 200) -> str:
    """A name for a Plotly axis, legend, title or point label. Plotly draws a few HTML tags in labels (``<a href>``,
    ``<span style>``, ``<br>``), so the angle brackets and ampersands are escaped (Plotly shows the entities as the
    characters) and invisible characters are shown."""
    return html.escape(clean_text(text, strict=True, limit=limit).replace("\n", " "), quote=False)


def interval_text(row: dict[str, Any], digits: int = 0) -> str:
    """A board row's interval as text: "[lo, hi]", or "can't tell: <reason>" when the board could not bound it."""
    lo, hi = row.get("ci_low"), row.get("ci_high")
    if row.get("cant_tell") or lo is None or hi is None:
        return "can't tell: " + str(row.get("cant_tell") or "no interval")
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def noun(n: float, singular: str, plural: str | None = None) -> str:
    """The word that agrees with ``n`` (the one rule in ``standings.words``): ``noun(1, "vote")`` is "vote"."""
    return agreeing(n, singular, plural)


def count(n: float, singular: str, plural: str | None = None, bold: bool = False) -> str:
    """A count with the word that agrees with it: "1 vote", "2,480 votes", "**0** pairs" with ``bold``."""
    if not bold:
        return counted(n, singular, plural)
    number, _, word = counted(n, singular, plural).partition(" ")
    return f"**{number}** {word}"
