"""Contestants and battles: engines, personas, registry, pair sampling, leak checks, ratings and vibe features.

Imports db only. Everything here returns plain data; no UI code.
"""
