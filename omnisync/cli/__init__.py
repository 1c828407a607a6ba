"""The ``omnisync`` command: look into, move and tend the memory stores agents share.

The console script is ``omnisync.cli.main:main``; ``python -m omnisync.cli`` runs the same.
One module per concern: ``main`` (arguments, exit status), ``connect`` (which store),
``show`` (sessions, history, clear), ``runs`` (runs, approve, deny), ``preview``,
``transfer`` (export, import, copy) on ``records`` (the JSON Lines format) and ``restore``
(writing it back faithfully), ``sqlite_file`` (export --sqlite), ``output`` and ``progress``.
"""
