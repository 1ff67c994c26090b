"""The shell: Gradio app (one module per tab + a small composer), Typer CLI, login, headers and wiring.

Imports common, db, accounts, arena, standings, annotation and training. The only package that imports
gradio. Handlers convert inputs, call a domain service, map results to outputs.
"""
