"""A store URL that cannot work is a ConfigurationError naming the right form, before anything opens."""

import pytest

from omnisync import MemoryRouter
from omnisync.errors import ConfigurationError
from omnisync.stores.mongo.store import MongoStore


@pytest.mark.parametrize(
    ("kind", "url", "says"),
    [
        ("sql", "sqlite://memory.db", "sqlite:///memory.db"),
        ("sql", "postgres://u:secret@host/db", "postgresql"),
        ("sql", "memory.db", "sqlite:///relative/path.db"),
        ("sql", "sqlite:memory.db", "sqlite:///relative/path.db"),
        ("sql", "redis://localhost:6379/0", "MemoryRouter('redis', url=...)"),
        ("sql", "mongodb://localhost/app", "MemoryRouter('mongodb', url=...)"),
        ("redis", "sqlite:///./memory.db", "MemoryRouter('sql', url=...)"),
        ("mongodb", "redis://localhost:6379/0", "MemoryRouter('redis', url=...)"),
        ("sql", "  ", "empty URL"),
    ],
)
def test_a_wrong_url_names_the_form_to_use(tmp_path, monkeypatch, kind, url, says):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as raised:
        MemoryRouter(kind, url=url)
    assert says in str(raised.value)
    assert "secret" not in str(raised.value)
    assert list(tmp_path.iterdir()) == []


def test_a_good_sqlite_url_creates_its_file_only_when_the_store_is_first_used(tmp_path):
    router = MemoryRouter("sql", url=f"sqlite:///{tmp_path / 'memory.db'}")
    assert not (tmp_path / "memory.db").exists()
    router.store.sessions("assistant")
    assert (tmp_path / "memory.db").exists()
    router.close()


class _NoClient:
    def __init__(self, *args, **kwargs):
        pass

    def __getitem__(self, name):
        return _Database(name)

    def close(self):
        pass


class _Database:
    def __init__(self, name):
        self.name = name

    def __getitem__(self, name):
        return name


@pytest.mark.parametrize(
    ("url", "db_name", "environment", "chosen"),
    [
        ("mongodb://h/fromurl", None, None, "fromurl"),
        ("mongodb://h/fromurl", "given", None, "given"),
        ("mongodb://h/fromurl", None, "fromenv", "fromurl"),
        ("mongodb://h/", None, "fromenv", "fromenv"),
        ("mongodb://h", None, None, "omnisync"),
        ("mongodb://u:p@h1:1,h2:2/with%20space?replicaSet=r", None, None, "with space"),
    ],
)
def test_the_database_comes_from_the_argument_then_the_url_then_the_environment(monkeypatch, url, db_name, environment, chosen):
    import pymongo

    monkeypatch.setattr(pymongo, "MongoClient", _NoClient)
    if environment:
        monkeypatch.setenv("MONGODB_DB_NAME", environment)
    else:
        monkeypatch.delenv("MONGODB_DB_NAME", raising=False)
    monkeypatch.setattr(MongoStore, "ensure_indexes", lambda self: None)
    store = MongoStore.from_url(url, db_name)
    assert store.db.name == chosen


def test_a_real_server_keeps_the_store_in_the_database_the_url_names():
    from helpers import backends

    uri = backends.mongodb_uri().rstrip("/")
    with MemoryRouter("mongodb", url=f"{uri}/omnisync_url_db_test") as router:
        store = router.store
        try:
            assert store.db.name == "omnisync_url_db_test"
            assert "omnisync_url_db_test" in store.client.list_database_names()
        finally:
            store.client.drop_database("omnisync_url_db_test")


def test_every_kind_is_declared_once_and_its_schemes_name_it_back():
    from omnisync.router import STORE_KINDS
    from omnisync.stores.registry import KINDS, NETWORKED, kind_named_by

    assert STORE_KINDS == tuple(KINDS) == ("in_memory", "sql", "redis", "mongodb")
    assert NETWORKED == ("sql", "redis", "mongodb")
    for kind in KINDS.values():
        assert kind.store_class().kind == kind.name
        for scheme in kind.schemes:
            assert kind_named_by(f"{scheme}://host/x") == kind.name
        if kind.networked:
            assert kind_named_by(kind.example_url) == kind.name


@pytest.mark.parametrize(
    "url",
    ["postgresql+psy-copg://u@h/db", "postgresql+psycopg://u:p@h:5432/db", "sqlite+pysqlite:///a.db", "sqlite:///a.db", "postgresql://", "sqlite:////abs/a.db?mode=ro"],
)
def test_a_sql_url_is_refused_exactly_when_sqlalchemy_would_refuse_it(url):
    """The check stands in for SQLAlchemy's make_url, so a router is made without importing SQLAlchemy."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        make_url(url)
        sqlalchemy_refuses = False
    except ArgumentError:
        sqlalchemy_refuses = True
    try:
        MemoryRouter("sql", url=url)
        we_refuse = False
    except ConfigurationError as exc:
        assert "is not a database URL" in str(exc)
        we_refuse = True
    assert we_refuse == sqlalchemy_refuses


def test_making_a_sql_router_imports_no_sqlalchemy():
    """`omnisync serve` imports the user's module, which makes its router: SQLAlchemy waits for the first use."""
    import subprocess
    import sys

    code = "import sys; from omnisync import MemoryRouter; MemoryRouter('sql', url='sqlite:///never-opened.db'); print('sqlalchemy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
