"""Contestants and battles: engines behind one protocol and the one way to ask them, personas, the registry
and lifecycle, battles and their end, pair sampling, leak and identifiability checks and self-play.

Imports common, db and accounts. Everything here returns plain data; no UI code.
"""
