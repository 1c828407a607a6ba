"""Export, import and copy: sessions and run records out of one store and into another, usable from any code.

    from omnisync.transfer import copy_store, export_jsonl, import_export, read_export

    export_jsonl(router.store, "backup.jsonl")                    # or an open text stream
    report = import_export(other.store, read_export("backup.jsonl"))
    report = copy_store(router.store, other.store, agent="assistant", append=True)

One format (:mod:`.records`, JSON Lines), one way in (:mod:`.restore`, replaying history through
the public store interface), and a SQLite file for Datasette (:mod:`.sqlite_file`). Refusals
(a bad line, a destination that already holds a session, counts that differ) raise
:class:`~omnisync.errors.TransferError`; nothing is written before the input is checked.
"""

from ..errors import TransferError
from .export import Exported, export_jsonl, export_sqlite
from .load import copy_store, import_export, read_export
from .progress import NoProgress, Progress
from .records import Export
from .restore import Report

__all__ = [
    "Export",
    "Exported",
    "NoProgress",
    "Progress",
    "Report",
    "TransferError",
    "copy_store",
    "export_jsonl",
    "export_sqlite",
    "import_export",
    "read_export",
]
