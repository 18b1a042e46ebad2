#!/usr/bin/env bash
# A throw-away PostgreSQL 15 cluster for the SecureRecords PostgreSQL tests and benchmark.
#
#   scripts/postgres-test-cluster.sh start DIR   # creates and starts it; prints its URL on stdout
#   scripts/postgres-test-cluster.sh stop DIR    # stops it and deletes DIR
#
# DIR must not exist (start) and is owned by the `postgres` user (initdb refuses root). The server
# listens on 127.0.0.1 only, on a free port, with its unix socket inside DIR. Authentication: the
# test user `sf_test` with a password (scram-sha-256) on 127.0.0.1; no other host is allowed. The
# password is written to DIR/password (mode 0600), never printed. Environment: PG_BIN (default
# /usr/lib/postgresql/15/bin).
set -euo pipefail
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
command=${1:-}
dir=${2:-}
[ -n "$command" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

as_postgres() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

case "$command" in
start)
    [ -x "$PG_BIN/initdb" ] || { echo "$PG_BIN/initdb not found (apt-get install postgresql-15)" >&2; exit 1; }
    [ ! -e "$dir" ] || { echo "$dir exists; give a new directory" >&2; exit 1; }
    mkdir -p "$dir"
    chmod 0700 "$dir"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
    password=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
    umask 077
    printf '%s\n' "$password" > "$dir/password"
    as_postgres "$PG_BIN/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=reject \
        -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    # A free loopback port: ask the kernel for one.
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    cat > "$dir/data/pg_hba.conf" <<EOF
# Unix socket in $dir: the postgres superuser, for setup only.
local all postgres trust
# TCP: 127.0.0.1 only, the test user with its password.
host all sf_test 127.0.0.1/32 scram-sha-256
EOF
    cat >> "$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
password_encryption = 'scram-sha-256'
max_connections = 100
fsync = on
log_min_messages = warning
EOF
    as_postgres "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    # The password goes through standard input, not argv (it is hex: no quoting needed).
    as_postgres "$PG_BIN/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q >/dev/null <<EOF
CREATE ROLE sf_test LOGIN PASSWORD '$password';
CREATE DATABASE sf_test OWNER sf_test;
EOF
    echo "postgres://sf_test@127.0.0.1:$port/sf_test"
    ;;
stop)
    if [ -d "$dir/data" ]; then
        as_postgres "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
