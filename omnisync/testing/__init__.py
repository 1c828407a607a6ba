"""Record your agent's model calls once, replay them offline in CI.

    from omnisync.testing import cassette

    with cassette("greeting", folder="tests/cassettes"):
        agent.run("hello", session_id="t1")

With pytest, the ``omnisync_cassette`` fixture does the same, with the folder from the
``omnisync_cassette_dir`` ini option and the record mode from ``--omnisync-record-mode``
(``none`` unless the command line says otherwise).
"""

from .cassettes import DEFAULT_IGNORED_FIELDS, SCRUBBED_HEADERS, CassetteMismatchError, cassette, first_difference

__all__ = ["DEFAULT_IGNORED_FIELDS", "SCRUBBED_HEADERS", "CassetteMismatchError", "cassette", "first_difference"]
