"""Contestants and battles: engines, personas, registry, pair sampling, leak checks, probes, families, ratings
and vibe features.

Imports db and accounts only. Everything here returns plain data; no UI code.
"""
