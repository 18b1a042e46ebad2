#!/usr/bin/env bash
# A throw-away PostgreSQL 15 cluster for the SecureRecords PostgreSQL tests and benchmark.
#
#   scripts/postgres-test-cluster.sh start DIR   # creates and starts it; prints its URL on stdout
#   scripts/postgres-test-cluster.sh stop DIR    # stops it and deletes DIR
#
# DIR must not exist (start) and is owned by the `postgres` user (initdb refuses root). The server
# listens on 127.0.0.1 only, on a free port, with its unix socket inside DIR. Authentication: the
# test user `sf_test` with a password (scram-sha-256) on 127.0.0.1; no other host is allowed. The
# password is written to DIR/password (mode 0600), never printed. `sf_test` may run CHECKPOINT
# (pg_checkpoint: the benchmark starts each timed load from a checkpoint). TLS is available (not required)
# with a certificate for the name localhost (not the address 127.0.0.1) from a throw-away CA in
# DIR/ca.pem. Environment: PG_BIN (default /usr/lib/postgresql/15/bin).
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
    # TLS: a throw-away CA (DIR/ca.pem, for clients to verify against) and a server certificate for
    # the name localhost only, so that a client verifying it by the address 127.0.0.1 meets a
    # certificate that does not name its host (the wrong-host test). Clients may connect with or
    # without TLS.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=sf-test-ca" \
        -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
        -keyout "$dir/data/server.key" -out "$dir/server.csr" 2>/dev/null
    printf 'subjectAltName=DNS:localhost\n' > "$dir/server.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
        -extfile "$dir/server.ext" -out "$dir/data/server.crt" 2>/dev/null
    rm -f "$dir/ca.key" "$dir/server.csr" "$dir/server.ext" "$dir/ca.srl"
    chmod 0644 "$dir/ca.pem"
    chmod 0600 "$dir/data/server.key"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir/data/server.key" "$dir/data/server.crt"
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
ssl = on
ssl_cert_file = 'server.crt'
ssl_key_file = 'server.key'
max_connections = 200
fsync = on
log_min_messages = warning
EOF
    # The server must not inherit our standard output or error: a caller reading them to the end would wait for it.
    as_postgres "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start </dev/null >/dev/null 2>"$dir/pg_ctl.log" \
        || { cat "$dir/server.log" >&2; exit 1; }
    # The password goes through standard input, not argv (it is hex: no quoting needed).
    as_postgres "$PG_BIN/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q >/dev/null <<EOF
CREATE ROLE sf_test LOGIN PASSWORD '$password';
CREATE DATABASE sf_test OWNER sf_test;
GRANT pg_checkpoint TO sf_test;
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
