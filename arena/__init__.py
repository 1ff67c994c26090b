"""Contestants and battles: engines behind one protocol and the one way to ask them, personas, the registry
and lifecycle, battles and their end, pair sampling, leak and identifiability checks, self-play, and the text
features (markers, tone axes) that the layers above all read.

Imports common, db and accounts. Everything here returns plain data; no UI code.
"""
