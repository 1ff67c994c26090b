"""Every ``gr.HTML`` of the running app shows only what the display path allows, whatever a handler returns."""

from __future__ import annotations

import gradio as gr

HOSTILE = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script><b style="x">kept text</b>'


def test_every_html_component_is_sanitized(studio_app):
    html = [b for b in studio_app.demo.blocks.values() if isinstance(b, gr.HTML)]
    assert len(html) > 20  # the app's pages have dozens
    unwrapped = [b.elem_id for b in html if not getattr(b, "_vs_sanitized", False)]
    assert not unwrapped, unwrapped
    for b in html:
        out = b.postprocess(HOSTILE)
        shown = out if isinstance(out, str) else str(out)
        assert (
            "<img" not in shown
            and "<script" not in shown
            and "onerror" not in shown
            and "style=" not in shown
        )
        assert "kept text" in shown


def test_display_path_output_is_unchanged_by_the_wall():
    from vibestudio.studio.render import sanitize_html, to_html

    text = "# Title\n\n- a [link](https://example.org) `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![img](http://x/y.png)"
    once = to_html(text)
    assert sanitize_html(once) == once
