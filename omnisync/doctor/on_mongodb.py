"""MongoDB or FerretDB: the connection, the collection and its indexes, the deployment, version, latency, clock."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .measure import clock_offset_s, judge_clock, judge_latency, judge_version
from .reach import explain
from .report import FAIL, OK, WARN, Report

ROUND_TRIPS_PER_RUN = 11
"""About what one ``run()`` of one model call sends to the store (pymongo's command events): tests/stores/test_round_trips.py holds it."""

FERRETDB_TESTED = (1, 24)


def check_mongodb(report: Report, url: str, timeout: float) -> None:
    from ..stores.mongo import store as mongo  # first: without pymongo it names the extra to install

    import pymongo
    from pymongo import common
    from pymongo.errors import ConfigurationError, PyMongoError

    where = url.split("@")[-1].split("://")[-1].split("/")[0].split("?")[0] or "localhost:27017"
    millis = int(timeout * 1000)
    try:
        client: pymongo.MongoClient[Any] = pymongo.MongoClient(
            url, tz_aware=True, appname="omnisync-doctor", serverSelectionTimeoutMS=millis, connectTimeoutMS=millis, socketTimeoutMS=millis
        )
    except ConfigurationError as exc:
        report.add("reachable", FAIL, f"the URL is not usable: {exc}", "correct MONGODB_URI (mongodb://user:password@host:27017/database)")
        return
    with client:
        admin = client.admin
        try:
            hello = admin.command("hello")
        except PyMongoError as exc:
            happened, fix = explain(exc, where, timeout)
            report.add("reachable", FAIL, happened, fix)
            return
        store = mongo.MongoStore(client, mongo._database_in(url), ensure_indexes=False)
        report.add("reachable", OK, f"connected to {where}, database {store.db.name!r}")
        _judge_collection(report, store)
        _judge_deployment(report, hello)
        build = admin.command("buildInfo")
        ferret = build.get("ferretdbVersion")
        floor = tuple(int(part) for part in common.MIN_SUPPORTED_SERVER_VERSION.split("."))
        needs = f"pymongo {pymongo.version} refuses older servers"
        if ferret:
            _judge_ferretdb(report, str(ferret), str(build.get("version", "?")))
        else:
            judge_version(report, "MongoDB", str(build.get("version", "?")), floor, needs, "FerretDB 1.24 only: no MongoDB server runs in this project's CI")
        judge_latency(report, ROUND_TRIPS_PER_RUN, lambda: admin.command("ping"))
        judge_clock(report, {"server": clock_offset_s(lambda: _server_time(admin))}, precision_s=0.001)


def _server_time(admin: Any) -> datetime:
    """``hello``'s localTime (MongoDB and FerretDB both send it, to the millisecond)."""
    moment = admin.command("hello").get("localTime")
    if moment is None:
        moment = admin.command("serverStatus")["localTime"]
    return moment  # type: ignore[no-any-return]


def _judge_collection(report: Report, store: Any) -> None:
    from ..stores.mongo.indexes import RUN_INDEX, SEQ_INDEX

    name = f"{store.db.name}.{store.messages.name}"
    if store.messages.name not in store.db.list_collection_names():
        report.add(
            "schema",
            OK,
            f"no collection {name} yet: a fresh store, created with its indexes on first use "
            "(if you expected data, check the database in the URL, MONGODB_DB_NAME and MONGODB_COLLECTION); MongoDB keeps no schema version",
        )
        return
    indexes = set(store.messages.index_information()) | set(store.runs.index_information())
    missing = [index for index in (SEQ_INDEX, RUN_INDEX) if index not in indexes]
    if missing:
        report.add(
            "schema",
            WARN,
            f"{name} exists without omnisync's unique indexes ({', '.join(missing)}): another application's collection, or one made with ensure_indexes=False",
            "if it is omnisync's, run MongoStore.ensure_indexes() once (the unique indexes are what keep concurrent appends from taking one seq twice); else choose another MONGODB_COLLECTION",
        )
    else:
        count = store.messages.estimated_document_count()
        report.add("schema", OK, f"{name} with omnisync's indexes, about {count:,} documents; MongoDB keeps no schema version (the indexes are the layout's mark)")


def _judge_deployment(report: Report, hello: dict[str, Any]) -> None:
    if hello.get("msg") == "isdbgrid":
        report.add("topology", WARN, "a sharded cluster (mongos): untested with omnisync", "shard the collections on (agent, session_id) if you shard them; report what you find")
    elif hello.get("setName"):
        primary = "this member is the primary" if hello.get("isWritablePrimary") else f"the primary is {hello.get('primary', 'unknown')}"
        report.add("topology", OK, f"replica set {hello['setName']!r} ({primary}); writes use the client's write concern")
    elif not hello.get("isWritablePrimary", hello.get("ismaster", True)):
        report.add("topology", FAIL, "a server that does not take writes (a secondary reached directly)", "point the URL at the replica set (?replicaSet=NAME) or at the primary")
    else:
        report.add("topology", OK, "one server (not a replica set)")


def _judge_ferretdb(report: Report, ferret: str, wire: str) -> None:
    from .measure import version_tuple

    shown = ".".join(map(str, FERRETDB_TESTED))
    detail = f"FerretDB {ferret} (answers as MongoDB {wire})"
    if version_tuple(ferret) < FERRETDB_TESTED:
        report.add("server", WARN, f"{detail}: older than {shown}, the version omnisync's MongoDB store was tested and probed with", f"upgrade FerretDB to {shown} or later")
    else:
        report.add("server", OK, f"{detail}; omnisync's MongoDB store was tested and probed with FerretDB {shown}")
