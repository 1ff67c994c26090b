"""Preference data in and out, with provenance.

Importers read FastChat battles, AlpacaEval, UltraFeedback, HelpSteer2 and TRL. Exporters write TRL
standard / conversational, KTO, and the same third-party layouts.
- ``common.files``, the studio's one reader of untrusted files, turns files into records with line
  numbers.
- ``importers`` validates records into one canonical row.
- ``store`` writes an import in one transaction.
- ``exporters`` turns labels back into rows and files.
"""

from vibestudio.annotation.formats.exporters import (
    EXPORT_FORMATS,
    FILE_FORMATS,
    ExportResult,
    ExportSpec,
    export_file,
    export_rows,
    snapshot_from_labels,
    write_rows,
)
from vibestudio.annotation.formats.importers import FORMATS, detect_format
from vibestudio.annotation.formats.store import ImportReport, ImportValidationError, import_file, parse_file
from vibestudio.common.files import RowError, read_records

__all__ = [
    "EXPORT_FORMATS",
    "FILE_FORMATS",
    "FORMATS",
    "ExportResult",
    "ExportSpec",
    "ImportReport",
    "ImportValidationError",
    "RowError",
    "detect_format",
    "export_file",
    "export_rows",
    "import_file",
    "parse_file",
    "read_records",
    "snapshot_from_labels",
    "write_rows",
]
