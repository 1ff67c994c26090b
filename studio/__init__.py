"""The shell: Gradio app (one module per tab + a small composer), Typer CLI, settings and wiring.

The only package that imports gradio. Handlers convert inputs, call a domain service, map results to outputs.
"""
