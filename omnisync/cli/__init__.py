"""The ``omnisync`` command: look into, move and tend the memory stores agents share.

The console script is ``omnisync.cli.main:main``; ``python -m omnisync.cli`` runs the same.
A thin shell: ``main`` (arguments, errors to exit statuses), ``connect`` (which store),
``reading`` (a store a command only reads must already be there), ``show`` (sessions, history,
clear), ``runs`` (runs, approve, deny), ``preview``, ``transfer`` (export, import, copy over the
:mod:`omnisync.transfer` library), ``output`` and ``progress``.
"""
