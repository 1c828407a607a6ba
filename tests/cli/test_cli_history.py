"""``omnisync search``, ``fork`` and ``reindex``, run as users run them (a subprocess on a SQLite file)."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from omnisync.messages import Message
from omnisync.stores.sql.store import SQLStore
from helpers.cli_run import cli, environment

AGENT = "helper"


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    with SQLStore(url) as store:
        store.append(AGENT, "trip", [Message(role="user", content="Book the Lisbon flight"), Message(role="assistant", content="Booked: Lisbon, Friday.")])
        store.append(AGENT, "work", [Message(role="user", content="Write the report")])
        store.append("someone-else", "trip", [Message(role="user", content="Lisbon")])
    return url


@pytest.fixture
def env(db):
    return environment(DATABASE_URL=db)


def test_search_prints_hits_of_one_agent_as_a_table_or_json(env):
    table = cli("search", "lisbon", "--agent", AGENT, env=env)
    assert table.returncode == 0, table
    assert table.stdout.splitlines()[0].split() == ["SESSION", "SEQ", "ROLE", "SCORE", "SNIPPET"]
    assert len(table.stdout.splitlines()) == 3 and "Booked: Lisbon, Friday." in table.stdout
    hits = json.loads(cli("search", "LISBON friday", "--agent", AGENT, "--json", env=env).stdout)
    assert [(h["session_id"], h["seq"], h["role"]) for h in hits] == [("trip", 4, "assistant")]
    nothing = cli("search", "!!!", "--agent", AGENT, env=env)
    assert nothing.returncode == 0 and "holds every word" in nothing.stderr
    refused = cli("search", "x", "--agent", AGENT, "--limit", "0", env=env)
    assert refused.returncode == 2 and refused.stderr.strip().endswith("limit must be a whole number from 1 to 100, not 0")


def test_fork_copies_a_session_and_prints_its_id(env, db):
    result = cli("fork", "trip", "--agent", AGENT, "--at", "2", "--new-session", "trip-2", env=env)
    assert result.returncode == 0, result
    assert result.stdout.strip() == "trip-2"
    with SQLStore(db) as store:
        assert [m.content for m in store.history(AGENT, "trip-2")] == ["Book the Lisbon flight"]
        assert len(store.history(AGENT, "trip")) == 2
    taken = cli("fork", "trip", "--agent", AGENT, "--new-session", "trip-2", env=env)
    assert taken.returncode == 2 and "already holds messages: fork into a new session id" in taken.stderr


def test_reindex_rebuilds_terms_lost_from_the_index(env, db):
    engine = sa.create_engine(db)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE omnisync_messages SET terms = NULL"))
    engine.dispose()
    assert json.loads(cli("search", "report", "--agent", AGENT, "--json", env=env).stdout) == []
    result = cli("reindex", env=env)
    assert result.returncode == 0 and "reindexed: 4 messages" in result.stdout, result
    assert [h["session_id"] for h in json.loads(cli("search", "report", "--agent", AGENT, "--json", env=env).stdout)] == ["work"]
