"""Annotation: preference data from votes and labels, rubrics, judges, agreement, import/export formats.

Imports db and arena. Returns plain data; writes files only for frozen snapshots and exports.
"""
