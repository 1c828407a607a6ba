"""The SQL store, on SQLAlchemy Core: SQLite on one machine, PostgreSQL when processes share it.

``store`` is the store; ``sqlite`` and ``postgres`` its subclasses on their own drivers; ``schema``
the tables and ``migrations`` their upgrades; ``search`` the full-text index; ``open`` what the
registry asks before SQLAlchemy is imported; ``retry`` a save sent again on a fresh connection;
``pooling`` what PgBouncer needs. Nothing is imported here, so checking a URL stays cheap.
"""
