#!/bin/sh
# The PostgreSQL of deploy/podman/shopledger-try.yaml: makes the cluster on the first start (the role
# `shopledger` with $TRY_DB_PASSWORD, the database `shopledger` it owns), then runs postgres in the
# foreground as `postgres`, on 127.0.0.1 only: the pod's containers share that address, nothing else does.
set -eu
volume=/var/lib/shopledger-try
data=$volume/pgdata
bin=/usr/lib/postgresql/15/bin
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }
: "${TRY_DB_PASSWORD:?set TRY_DB_PASSWORD}"
# A fresh volume may come owned by root; the socket's folder is made at boot on a host, not in an image.
chown postgres:postgres "$volume"
install -d -o postgres -g postgres -m 2775 /run/postgresql
if [ ! -s "$data/PG_VERSION" ]; then
    # Made beside and renamed when complete: a start cut short is started again from nothing.
    rm -rf "$data.new"
    # The superuser `postgres` by peer (inside this container only), every other role by password.
    as_postgres "$bin/initdb" -D "$data.new" --encoding=UTF8 --locale=C.UTF-8 \
        --auth-local=peer --auth-host=scram-sha-256 >/dev/null
    as_postgres "$bin/pg_ctl" -D "$data.new" -w -o "-c listen_addresses='' -c port=5432" start >/dev/null
    as_postgres "$bin/psql" -h /run/postgresql -p 5432 -d postgres -q -v ON_ERROR_STOP=1 \
        -v password="$TRY_DB_PASSWORD" <<'SQL'
CREATE ROLE shopledger LOGIN PASSWORD :'password';
CREATE DATABASE shopledger OWNER shopledger;
SQL
    as_postgres "$bin/pg_ctl" -D "$data.new" -w stop >/dev/null
    mv "$data.new" "$data"
    echo "postgres-entrypoint: made the cluster, the role and the database shopledger"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups -- \
    "$bin/postgres" -D "$data" -c listen_addresses=127.0.0.1 -c port=5432
