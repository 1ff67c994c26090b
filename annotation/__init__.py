"""Annotation: preference data from votes and labels, rubrics, judges, agreement, import/export formats.

Imports common, textfeatures, db, accounts, arena and standings. Returns plain data. It writes files only
for frozen snapshots and exports.
"""
