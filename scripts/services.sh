#!/usr/bin/env bash
# Local test servers for omnisync: Redis, a Redis Cluster (three masters with a
# replica each), PostgreSQL, PgBouncer in front of it (transaction pooling, and
# statement pooling under a second database name) and FerretDB (MongoDB wire
# protocol), all bound to 127.0.0.1, none run through systemd.
#
#   scripts/services.sh start    install what is missing, start, wait, print exports
#   scripts/services.sh stop     stop them all
#   scripts/services.sh status   one line per server; non-zero if any is down
#   scripts/services.sh env      print the export lines only
#
#   eval "$(scripts/services.sh start)"   # only the export lines go to stdout
#
# Environment: OMNISYNC_SERVICES_DIR (state dir), REDIS_PORT, REDIS_CLUSTER_PORT
# (the first of six), PG_PORT, PGBOUNCER_PORT, MONGO_PORT, FERRETDB_VERSION,
# SERVICES_WAIT_SECS.
set -euo pipefail

STATE_DIR="${OMNISYNC_SERVICES_DIR:-$HOME/.cache/omnisync-services}"
REDIS_PORT="${REDIS_PORT:-6379}"
REDIS_CLUSTER_PORT="${REDIS_CLUSTER_PORT:-7000}"
PG_PORT="${PG_PORT:-5432}"
PGBOUNCER_PORT="${PGBOUNCER_PORT:-6432}"
MONGO_PORT="${MONGO_PORT:-27017}"
FERRETDB_VERSION="${FERRETDB_VERSION:-v1.24.2}"
WAIT_SECS="${SERVICES_WAIT_SECS:-60}"
HOST=127.0.0.1
SELF=$(readlink -f "${BASH_SOURCE[0]}")

PG_ROLE=omnisync
PG_PASSWORD=omnisync
PG_DB=omnisync_test
PGB_STATEMENT_DB=${PG_DB}_statement  # PgBouncer's name for PG_DB in statement pooling mode

REDIS_DIR="$STATE_DIR/redis"
CLUSTER_DIR="$STATE_DIR/redis-cluster"
CLUSTER_PORTS=$(seq "$REDIS_CLUSTER_PORT" $((REDIS_CLUSTER_PORT + 5)))
FERRET_DIR="$STATE_DIR/ferretdb"
FERRET_BIN="$STATE_DIR/bin/ferretdb"
FERRET_PID="$FERRET_DIR/ferretdb.pid"
FERRET_LOG="$FERRET_DIR/ferretdb.log"
# PG_DIR (data, socket, log) is resolved in resolve_pg_dir: the postgres user
# must be able to reach it, which it cannot under a 0700 $HOME such as /root.

log() { echo "services: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# --- helpers ------------------------------------------------------------------

APT_UPDATED=
apt_install() {
    [ "$(id -u)" = 0 ] || die "need root to apt-get install $*"
    # Keep Debian's maintainer scripts from starting their own services.
    local policy=/usr/sbin/policy-rc.d added=
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added=1
    fi
    if [ -z "$APT_UPDATED" ]; then
        log "apt-get update"
        apt-get update -qq >&2
        APT_UPDATED=1
    fi
    log "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 </dev/null
    [ -z "$added" ] || rm -f "$policy"
}

# Serialise concurrent start/stop runs. fd 9 is closed for the servers we
# spawn, or they would hold the lock for their lifetime.
lock_state_dir() {
    mkdir -p "$STATE_DIR"
    exec 9>"$STATE_DIR/.lock"
    flock -w 900 9 || die "timed out waiting for another services.sh run ($STATE_DIR/.lock)"
}

tcp_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# wait_until NAME LOGFILE CMD...: poll CMD until it succeeds; after WAIT_SECS
# show the end of LOGFILE and return 1.
wait_until() {
    local name=$1 logfile=$2 deadline=$((SECONDS + WAIT_SECS))
    shift 2
    until "$@"; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            log "$name did not answer within ${WAIT_SECS}s; last lines of $logfile:"
            tail -n 30 "$logfile" >&2 2>/dev/null || true
            return 1
        fi
        sleep 0.5
    done
    log "$name is up"
}

# --- Redis --------------------------------------------------------------------

redis_up() { redis-cli -h "$HOST" -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; }

start_redis() {
    { command -v redis-server >/dev/null && command -v redis-cli >/dev/null; } ||
        apt_install redis-server redis-tools
    if redis_up; then log "redis already up on port $REDIS_PORT"; return; fi
    mkdir -p "$REDIS_DIR"
    redis-server --daemonize yes --bind "$HOST" --port "$REDIS_PORT" \
        --save '' --appendonly no --dir "$REDIS_DIR" \
        --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" >&2 9>&- ||
        { tail -n 30 "$REDIS_DIR/redis.log" >&2 2>/dev/null; die "redis failed to start"; }
    wait_until redis "$REDIS_DIR/redis.log" redis_up || die "redis failed to start"
}

stop_redis() {
    if command -v redis-cli >/dev/null && redis_up; then
        redis-cli -h "$HOST" -p "$REDIS_PORT" shutdown nosave >&2 || true
        log "redis stopped"
    else
        log "redis not running"
    fi
}

# --- Redis Cluster --------------------------------------------------------------
# Six redis-server processes on REDIS_CLUSTER_PORT..+5: three masters with a
# replica each. Test data only: no persistence, and a cluster that is not
# healthy at start is wiped and created anew.

cluster_cli() { redis-cli -h "$HOST" -p "$1" "${@:2}"; }
cluster_node_up() { cluster_cli "$1" ping 2>/dev/null | grep -q PONG; }

cluster_ok() {
    local port
    for port in $CLUSTER_PORTS; do
        cluster_cli "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
        [ "$(cluster_cli "$port" cluster info 2>/dev/null | sed -n 's/^cluster_known_nodes:\([0-9]*\).*/\1/p')" = 6 ] || return 1
    done
}

start_cluster_node() {
    local port=$1 dir="$CLUSTER_DIR/$1"
    mkdir -p "$dir"
    redis-server --daemonize yes --bind "$HOST" --port "$port" \
        --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" --cluster-node-timeout 5000 \
        --save '' --appendonly no --dir "$dir" \
        --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2 9>&- ||
        { tail -n 30 "$dir/redis.log" >&2 2>/dev/null; die "redis cluster node $port failed to start"; }
    wait_until "redis cluster node $port" "$dir/redis.log" cluster_node_up "$port" ||
        die "redis cluster node $port failed to start"
}

stop_redis_cluster() {
    local port stopped=
    for port in $CLUSTER_PORTS; do
        if cluster_node_up "$port"; then
            cluster_cli "$port" shutdown nosave >&2 || true
            stopped=1
        fi
    done
    [ -n "$stopped" ] && log "redis cluster stopped" || log "redis cluster not running"
}

start_redis_cluster() {
    { command -v redis-server >/dev/null && command -v redis-cli >/dev/null; } ||
        apt_install redis-server redis-tools
    if cluster_ok; then log "redis cluster already up on ports $REDIS_CLUSTER_PORT-$((REDIS_CLUSTER_PORT + 5))"; return; fi
    stop_redis_cluster
    rm -rf "$CLUSTER_DIR"
    local port nodes=()
    for port in $CLUSTER_PORTS; do
        start_cluster_node "$port"
        nodes+=("$HOST:$port")
    done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$CLUSTER_DIR/create.log" 2>&1 ||
        { tail -n 30 "$CLUSTER_DIR/create.log" >&2; die "redis-cli --cluster create failed"; }
    wait_until "redis cluster" "$CLUSTER_DIR/create.log" cluster_ok || die "redis cluster did not reach cluster_state:ok"
}

# --- PostgreSQL -----------------------------------------------------------------

PG_BIN=
find_pg_bin() {
    local d
    for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r); do
        [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ] && { PG_BIN=$d; return 0; }
    done
    command -v pg_ctl >/dev/null && command -v initdb >/dev/null &&
        { PG_BIN=$(dirname "$(readlink -f "$(command -v pg_ctl)")"); return 0; }
    return 1
}

ensure_pg_installed() {
    if ! find_pg_bin || ! command -v psql >/dev/null || ! command -v pg_isready >/dev/null; then
        apt_install postgresql postgresql-client
        find_pg_bin || die "postgresql installed but pg_ctl/initdb not found"
    fi
    if ! id postgres >/dev/null 2>&1; then
        log "creating user postgres"
        useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/bash postgres
    fi
}

as_pg() { runuser -u postgres -- "$@"; }

PG_DIR=
resolve_pg_dir() {
    mkdir -p "$STATE_DIR"
    if [ -L "$STATE_DIR/postgres" ]; then
        PG_DIR=$(readlink -f "$STATE_DIR/postgres")
    elif [ -d "$STATE_DIR/postgres" ] || as_pg test -x "$STATE_DIR"; then
        PG_DIR="$STATE_DIR/postgres"
    else
        # postgres cannot reach the state dir: keep the cluster under its home
        # and link it from the state dir.
        PG_DIR="/var/lib/postgresql/omnisync-services-$(printf %s "$STATE_DIR" | md5sum | cut -c1-8)"
        ln -sfn "$PG_DIR" "$STATE_DIR/postgres"
    fi
    PGDATA="$PG_DIR/data"
    PG_SOCK="$PG_DIR/run"
    PG_LOG="$PG_DIR/postgres.log"
}

pg_up() { pg_isready -q -h "$HOST" -p "$PG_PORT" -t 2 2>/dev/null; }
pg_admin() { psql -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres; }
pg_app_ok() {
    PGPASSWORD="$PG_PASSWORD" psql -X -q -h "$HOST" -p "$PG_PORT" -U "$PG_ROLE" -d "$PG_DB" \
        -tAc 'select 1' 2>/dev/null | grep -q 1
}

start_postgres() {
    ensure_pg_installed
    resolve_pg_dir
    if pg_up; then
        log "postgres already up on port $PG_PORT"
    else
        mkdir -p "$PG_DIR" "$PG_SOCK"
        chown postgres:postgres "$PG_DIR" "$PG_SOCK"
        chmod 700 "$PG_DIR"
        if [ ! -s "$PGDATA/PG_VERSION" ]; then
            log "initdb $PGDATA"
            as_pg "$PG_BIN/initdb" -D "$PGDATA" -U postgres -E UTF8 --locale=C \
                --auth-local=trust --auth-host=scram-sha-256 >"$PG_DIR/initdb.log" 2>&1 ||
                { tail -n 30 "$PG_DIR/initdb.log" >&2; die "initdb failed"; }
            echo "include_if_exists = 'omnisync.conf'" >>"$PGDATA/postgresql.conf"
        fi
        # Rewritten on every start so port overrides take effect. A test-only
        # cluster: durability is traded for speed.
        cat >"$PGDATA/omnisync.conf" <<EOF
listen_addresses = '$HOST'
port = $PG_PORT
unix_socket_directories = '$PG_SOCK'
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
        chown postgres:postgres "$PGDATA/omnisync.conf"
        # A stale pid file from a killed server would block the start.
        if [ -f "$PGDATA/postmaster.pid" ] && ! as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
            rm -f "$PGDATA/postmaster.pid"
        fi
        setsid -w runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$PG_LOG" \
            -w -t "$WAIT_SECS" start >&2 </dev/null 9>&- ||
            { tail -n 30 "$PG_LOG" >&2; die "postgres failed to start"; }
        wait_until postgres "$PG_LOG" pg_up || die "postgres failed to start"
    fi
    if [ -S "$PG_SOCK/.s.PGSQL.$PG_PORT" ]; then
        # The test database is made empty on every start: the omnisync that last
        # used it stamped its schema version there, and a checkout of another
        # version (an older main after a newer branch) must not inherit it.
        pg_admin <<SQL >&2
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$PG_ROLE') THEN
    CREATE ROLE $PG_ROLE LOGIN CREATEDB PASSWORD '$PG_PASSWORD';
  ELSE
    ALTER ROLE $PG_ROLE LOGIN CREATEDB PASSWORD '$PG_PASSWORD';
  END IF;
END \$\$;
DROP DATABASE IF EXISTS $PG_DB WITH (FORCE);
CREATE DATABASE $PG_DB OWNER $PG_ROLE;
SQL
    fi
    pg_app_ok || die "cannot connect to $PG_DB on port $PG_PORT as $PG_ROLE (is another postgres on that port?)"
}

stop_postgres() {
    find_pg_bin || { log "postgres not installed"; return 0; }
    resolve_pg_dir
    if [ -f "$PGDATA/postmaster.pid" ] && as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
        as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >&2
        log "postgres stopped"
    else
        log "postgres not running"
    fi
}

# --- PgBouncer ------------------------------------------------------------------
# In front of the PostgreSQL above, in transaction pooling mode: each transaction
# may run on a different server connection, so nothing that lives in a server
# session (prepared statements, SET, advisory session locks) carries over. Any
# database name is passed through to the server's database of that name, except
# PGB_STATEMENT_DB: PG_DB again, in statement pooling mode, which refuses every
# transaction of more than one statement (what `omnisync doctor` must catch).

PGB_DIR= PGB_INI= PGB_PID= PGB_LOG=
resolve_pgb_dir() {
    resolve_pg_dir
    PGB_DIR="$PG_DIR/pgbouncer"  # under PG_DIR: pgbouncer runs as postgres, which must reach it
    PGB_INI="$PGB_DIR/pgbouncer.ini"
    PGB_PID="$PGB_DIR/pgbouncer.pid"
    PGB_LOG="$PGB_DIR/pgbouncer.log"
}

pgbouncer_db_ok() {
    PGPASSWORD="$PG_PASSWORD" psql -X -q -h "$HOST" -p "$PGBOUNCER_PORT" -U "$PG_ROLE" -d "$1" \
        -tAc 'select 1' 2>/dev/null | grep -q 1
}
pgbouncer_app_ok() { pgbouncer_db_ok "$PG_DB"; }
pgbouncer_statement_ok() { pgbouncer_db_ok "$PGB_STATEMENT_DB"; }

write_pgbouncer_config() {
    mkdir -p "$PGB_DIR"
    cat >"$PGB_DIR/userlist.txt" <<EOF2
"$PG_ROLE" "$PG_PASSWORD"
EOF2
    cat >"$PGB_INI" <<EOF2
[databases]
$PGB_STATEMENT_DB = host=$HOST port=$PG_PORT dbname=$PG_DB pool_mode=statement
* = host=$HOST port=$PG_PORT

[pgbouncer]
listen_addr = $HOST
listen_port = $PGBOUNCER_PORT
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $PGB_DIR/userlist.txt
pool_mode = transaction
max_client_conn = 400
default_pool_size = 20
logfile = $PGB_LOG
pidfile = $PGB_PID
EOF2
    chown -R postgres:postgres "$PGB_DIR"
    chmod 600 "$PGB_DIR/userlist.txt"
}

start_pgbouncer() {
    command -v pgbouncer >/dev/null || apt_install pgbouncer
    resolve_pgb_dir
    local pid
    if tcp_open "$PGBOUNCER_PORT"; then
        log "pgbouncer already up on port $PGBOUNCER_PORT"
        pid=$(cat "$PGB_PID" 2>/dev/null || true)
        if ! grep -q "^$PGB_STATEMENT_DB = " "$PGB_INI" 2>/dev/null && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            # Started from an older config, without the statement pooling name (not
            # probed: a failed login to it would hold the next one for 15 s).
            # SIGHUP rereads pgbouncer.ini, [databases] included, and drops no client.
            write_pgbouncer_config
            kill -HUP "$pid"
            log "pgbouncer reloaded with $PGB_STATEMENT_DB (statement pooling)"
        fi
    else
        write_pgbouncer_config
        rm -f "$PGB_PID"
        runuser -u postgres -- pgbouncer -d "$PGB_INI" >&2 </dev/null 9>&- ||
            { tail -n 30 "$PGB_LOG" >&2 2>/dev/null; die "pgbouncer failed to start"; }
    fi
    wait_until pgbouncer "$PGB_LOG" pgbouncer_app_ok ||
        die "cannot reach $PG_DB through pgbouncer on port $PGBOUNCER_PORT as $PG_ROLE"
    wait_until "pgbouncer's $PGB_STATEMENT_DB" "$PGB_LOG" pgbouncer_statement_ok ||
        die "cannot reach $PGB_STATEMENT_DB through pgbouncer on port $PGBOUNCER_PORT (not started by this script? $SELF stop, then start)"
}

stop_pgbouncer() {
    command -v pgbouncer >/dev/null || { log "pgbouncer not installed"; return 0; }
    resolve_pgb_dir
    local pid
    pid=$(cat "$PGB_PID" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -INT "$pid"  # SIGINT: shut down at once, closing client and server connections
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        log "pgbouncer stopped"
    else
        log "pgbouncer not running"
    fi
}

# --- FerretDB -------------------------------------------------------------------

ferret_up() {
    tcp_open "$MONGO_PORT" || return 1
    python3 -c 'import pymongo' 2>/dev/null || return 0
    python3 - "$HOST" "$MONGO_PORT" <<'PY' 2>/dev/null
import sys, pymongo
pymongo.MongoClient(sys.argv[1], int(sys.argv[2]), serverSelectionTimeoutMS=2000).admin.command("ping")
PY
}

build_ferretdb() {
    if [ -x "$FERRET_BIN" ] && [ "$(cat "$FERRET_BIN.version" 2>/dev/null)" = "$FERRETDB_VERSION" ]; then
        return
    fi
    command -v go >/dev/null || { [ -x /usr/local/go/bin/go ] && PATH="/usr/local/go/bin:$PATH"; } ||
        die "go is not installed; cannot build FerretDB"
    log "building FerretDB $FERRETDB_VERSION (takes ~4 min from a cold Go cache)"
    # A plain `go install .../cmd/ferretdb@version` builds, but the binary
    # panics at start-up: build/version/version.txt is generated by FerretDB's
    # release tooling and is not in the module zip. So build from a copy of
    # the module source with that file added. The SQLite backend is pure Go
    # (modernc.org/sqlite): no cgo needed.
    local src="$STATE_DIR/build/ferretdb-src" modsrc
    export CGO_ENABLED=0 GOFLAGS="-buildvcs=false -trimpath"
    modsrc=$(go mod download -json "github.com/FerretDB/FerretDB@$FERRETDB_VERSION" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
    { [ -n "$modsrc" ] && [ -d "$modsrc" ]; } || die "go mod download of FerretDB $FERRETDB_VERSION failed"
    rm -rf "$src" && mkdir -p "$(dirname "$src")" "$STATE_DIR/bin"
    cp -r "$modsrc" "$src" && chmod -R u+w "$src"
    echo "$FERRETDB_VERSION" >"$src/build/version/version.txt"
    (cd "$src" && GOBIN="$STATE_DIR/bin" go install ./cmd/ferretdb) >&2 ||
        die "build of FerretDB $FERRETDB_VERSION failed"
    rm -rf "$src"
    rmdir "$(dirname "$src")" 2>/dev/null || true
    "$FERRET_BIN" --version >/dev/null || die "built FerretDB binary does not run"
    echo "$FERRETDB_VERSION" >"$FERRET_BIN.version"
}

# Runs in the background (own session) and restarts FerretDB when it dies: in
# v1.24 a panic in one request handler (e.g. $project {_id: 0} then $unwind)
# leaks an iterator whose finalizer then panics the whole process at a GC.
ferretdb_supervisor() {
    echo $$ >"$FERRET_PID"
    local quick=0 started rc
    while :; do
        started=$SECONDS
        "$FERRET_BIN" \
            --listen-addr="$HOST:$MONGO_PORT" \
            --handler=sqlite --sqlite-url="file:$FERRET_DIR/sqlite/" \
            --state-dir="$FERRET_DIR/state" \
            --debug-addr=- --telemetry=disable \
            --log-level=WARN && rc=0 || rc=$?
        if [ $((SECONDS - started)) -lt 5 ]; then quick=$((quick + 1)); else quick=0; fi
        if [ "$quick" -ge 3 ]; then
            echo "services: ferretdb keeps exiting at start-up (status $rc); giving up"
            rm -f "$FERRET_PID"
            exit 1
        fi
        echo "services: ferretdb exited with status $rc at $(date -u +%FT%TZ); restarting"
        sleep 1
    done
}

# The build is CPU work and apt-get waits on the network: on a fresh machine they overlap.
FERRET_BUILD_PID=
build_ferretdb_in_background() {
    tcp_open "$MONGO_PORT" && return
    build_ferretdb &
    FERRET_BUILD_PID=$!
}

start_ferretdb() {
    if [ -n "$FERRET_BUILD_PID" ]; then
        wait "$FERRET_BUILD_PID" || die "build of FerretDB $FERRETDB_VERSION failed (see above)"
    fi
    if tcp_open "$MONGO_PORT"; then
        log "ferretdb already up on port $MONGO_PORT"
        wait_until ferretdb "$FERRET_LOG" ferret_up || die "port $MONGO_PORT is open but does not answer MongoDB ping"
        return
    fi
    build_ferretdb
    mkdir -p "$FERRET_DIR/sqlite" "$FERRET_DIR/state"
    rm -f "$FERRET_PID"
    OMNISYNC_SERVICES_DIR="$STATE_DIR" MONGO_PORT="$MONGO_PORT" \
        setsid nohup "$SELF" _ferretdb-supervisor >>"$FERRET_LOG" 2>&1 </dev/null 9>&- &
    wait_until ferretdb "$FERRET_LOG" ferret_up || { stop_ferretdb; die "ferretdb failed to start"; }
}

stop_ferretdb() {
    local pid
    pid=$(cat "$FERRET_PID" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        # The supervisor leads its own process group: stop it and FerretDB.
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
        for _ in $(seq 1 50); do
            kill -0 -- "-$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -KILL -- "-$pid" 2>/dev/null || true
        log "ferretdb stopped"
    else
        log "ferretdb not running"
    fi
    rm -f "$FERRET_PID"
}

# --- commands -------------------------------------------------------------------

print_env() {
    echo "export REDIS_URL=redis://$HOST:$REDIS_PORT/0"
    echo "export REDIS_CLUSTER_URL=redis+cluster://$HOST:$REDIS_CLUSTER_PORT/"
    echo "export DATABASE_URL_POSTGRES=postgresql+psycopg://$PG_ROLE:$PG_PASSWORD@$HOST:$PG_PORT/$PG_DB"
    echo "export DATABASE_URL_PGBOUNCER=postgresql+psycopg://$PG_ROLE:$PG_PASSWORD@$HOST:$PGBOUNCER_PORT/$PG_DB"
    echo "export DATABASE_URL_PGBOUNCER_STATEMENT=postgresql+psycopg://$PG_ROLE:$PG_PASSWORD@$HOST:$PGBOUNCER_PORT/$PGB_STATEMENT_DB"
    echo "export MONGODB_URI=mongodb://$HOST:$MONGO_PORT/"
}

status() {
    local rc=0
    if command -v redis-cli >/dev/null && redis_up; then s=up; else s=down; rc=1; fi
    echo "redis     $s  $HOST:$REDIS_PORT"
    if command -v redis-cli >/dev/null && cluster_ok; then s=up; else s=down; rc=1; fi
    echo "cluster   $s  $HOST:$REDIS_CLUSTER_PORT-$((REDIS_CLUSTER_PORT + 5))"
    if command -v pg_isready >/dev/null && pg_up; then s=up; else s=down; rc=1; fi
    echo "postgres  $s  $HOST:$PG_PORT"
    if command -v psql >/dev/null && pgbouncer_app_ok; then s=up; else s=down; rc=1; fi
    echo "pgbouncer $s  $HOST:$PGBOUNCER_PORT"
    if command -v psql >/dev/null && pgbouncer_statement_ok; then s=up; else s=down; rc=1; fi
    echo "pgbouncer $s  $HOST:$PGBOUNCER_PORT/$PGB_STATEMENT_DB (statement pooling)"
    if tcp_open "$MONGO_PORT"; then s=up; else s=down; rc=1; fi
    echo "ferretdb  $s  $HOST:$MONGO_PORT"
    return $rc
}

case "${1:-}" in
    start)
        lock_state_dir
        build_ferretdb_in_background
        start_redis
        start_redis_cluster
        start_postgres
        start_pgbouncer
        start_ferretdb
        log "all services up (state in $STATE_DIR)"
        print_env
        ;;
    stop)
        lock_state_dir
        stop_ferretdb
        stop_pgbouncer
        stop_postgres
        stop_redis_cluster
        stop_redis
        ;;
    status) status ;;
    env) print_env ;;
    _ferretdb-supervisor) ferretdb_supervisor ;;
    *)
        echo "usage: $0 {start|stop|status|env}" >&2
        exit 2
        ;;
esac
