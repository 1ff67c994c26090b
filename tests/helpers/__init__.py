"""Helpers the tests share (not tests themselves, and not fixtures: those live in the ``conftest.py`` files).

- ``browser``: waits for browser tests (a text shown, an element emptied) and their time limit per step.
- ``files``: write rows as JSON / JSONL, build a conversation.
- ``models``: a tiny random Llama saved like a checkpoint.
- ``fake_openai``: a scripted OpenAI-compatible server whose behaviour the model name picks.
- ``scripted_chat``: a scripted chat server whose sycophancy is known (probe tests).
- ``servers``: a free port, a studio server in a subprocess, a studio home with a tiny parent and a snapshot.
- ``postgres``: a migrated test database (SQLite, or a fresh PostgreSQL schema).
- ``standings``: contestants and rated battles written to a database, and the plain leaderboard path.
- ``training``: preference rows, the fast job settings, the tiny-model parent contestant.
"""
