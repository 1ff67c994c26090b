"""Text from models, users and imports, made inert for display: HTML in it is shown, never rendered.

Gradio's Markdown and Chatbot sanitize HTML (no scripts or event handlers run), but they still render the
tags that survive: an answer could lay a full-page ``position:fixed`` box over the vote buttons, or load an
image from any server (a tracking beacon). ``inert`` escapes ``& < >`` so such text shows as the characters
the model wrote; Markdown images become their literal text for the same reason. Markdown itself still renders
(emphasis, lists, tables, links), and code spans and fenced blocks are left alone: Markdown already shows them
literally, and escaping there would print ``&lt;``.
"""

from __future__ import annotations

import html
import re

_CODE = re.compile(r"(```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]*`)", re.S)


def inert(text: str | None) -> str:
    """``text`` as Markdown whose HTML tags and images display as text."""
    if not text:
        return ""
    parts = _CODE.split(text)
    return "".join(
        p if i % 2 else html.escape(p, quote=False).replace("![", "!\\[") for i, p in enumerate(parts)
    )
