#!/usr/bin/env bash
# A three-node Patroni cluster on this machine, for the failover scenarios (`make test-ha`) and for trying
# failover by hand: each node is a network namespace (its own address, its own loopback) joined to a bridge,
# runs Patroni and PostgreSQL 15 as the postgres user, with the shipped deploy/patroni/patroni.yml; one etcd
# (the witness) and HAProxy with the shipped deploy/haproxy/haproxy.cfg run outside the nodes. Root only.
#
#   ha-lab.sh up DIR HAPROXY_PORT   make it (under DIR), wait for a leader and two synchronous-capable replicas
#   ha-lab.sh down DIR              stop everything, remove the namespaces and the bridge (DIR stays)
#   ha-lab.sh leader DIR            the leader's name, from Patroni's REST API
#   ha-lab.sh url DIR               the database URL the servers use (through HAProxy)
#   ha-lab.sh kill NODE             every process of the node SIGKILLed, its network cut (a dead machine)
#   ha-lab.sh freeze NODE / thaw NODE   every process of the node SIGSTOPped / SIGCONTinued
#   ha-lab.sh cut NODE / mend NODE      the node's network dropped silently (no reset) / restored
#   ha-lab.sh boot DIR NODE         start Patroni again on a killed node (its network restored)
#   ha-lab.sh crash-postgres DIR NODE   SIGKILL the node's postmaster only
#   ha-lab.sh switchover DIR        a planned switchover to a synchronous replica (patronictl)
# Nodes are node1..node3 at 10.77.0.11-13 on bridge slha0 (10.77.0.1), etcd at 10.77.0.1:2379.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bridge=slha0
subnet=10.77.0
nodes=(node1 node2 node3)
lab_file=/run/shopledger-ha-lab

ns() { echo "slha-$1"; }
address() { echo "$subnet.1${1#node}"; }
mac() { printf '02:77:00:00:00:1%s' "${1#node}"; }

pids_of() { ip netns pids "$(ns "$1")" 2>/dev/null || true; }

patroni_api() { # NODE PATH
    curl -s -m 1 "http://$(address "$1"):8008$2" || true
}

cmd_up() {
    local dir=$1 haproxy_port=$2
    # What an earlier lab left (a test process killed before its clean-up) goes first.
    [ -f "$lab_file" ] && cmd_down "$(cat "$lab_file")"
    # A namespace's links go away after it does (the kernel cleans up asynchronously): wait for them.
    for _ in $(seq 50); do
        ip link show "$bridge" >/dev/null 2>&1 || ip -br link | grep -q '^slha-' || break
        ip link del "$bridge" 2>/dev/null || true
        for link in $(ip -br link | awk '/^slha-/ { sub(/@.*/, "", $1); print $1 }'); do ip link del "$link" 2>/dev/null || true; done
        sleep 0.1
    done
    mkdir -p "$dir"
    echo "$dir" >"$lab_file"
    chmod 755 "$dir"
    ip link add "$bridge" type bridge
    ip addr add "$subnet.1/24" dev "$bridge"
    ip link set "$bridge" address 02:77:00:00:00:01
    ip link set "$bridge" up
    for node in "${nodes[@]}"; do
        local n; n=$(ns "$node")
        ip netns add "$n"
        ip link add "$n-h" type veth peer name eth0 netns "$n"
        ip link set "$n-h" master "$bridge"
        ip link set "$n-h" up
        ip netns exec "$n" ip link set lo up
        ip netns exec "$n" ip link set eth0 address "$(mac "$node")"
        ip netns exec "$n" ip addr add "$(address "$node")/24" dev eth0
        ip netns exec "$n" ip link set eth0 up
    done
    # Fixed neighbours: a node whose link is down is silent (packets vanish), never "no route to host".
    for node in "${nodes[@]}"; do
        ip neigh replace "$(address "$node")" lladdr "$(mac "$node")" nud permanent dev "$bridge"
        for other in "${nodes[@]}"; do
            [ "$other" = "$node" ] && continue
            ip netns exec "$(ns "$node")" ip neigh replace "$(address "$other")" lladdr "$(mac "$other")" nud permanent dev eth0
        done
        ip netns exec "$(ns "$node")" ip neigh replace "$subnet.1" lladdr 02:77:00:00:00:01 nud permanent dev eth0
    done

    mkdir -p "$dir/etcd"
    setsid etcd --name witness --data-dir "$dir/etcd/data" --enable-v2=true \
        --listen-client-urls "http://$subnet.1:2379" --advertise-client-urls "http://$subnet.1:2379" \
        --listen-peer-urls "http://$subnet.1:2380" --initial-advertise-peer-urls "http://$subnet.1:2380" \
        --initial-cluster "witness=http://$subnet.1:2380" >"$dir/etcd/etcd.log" 2>&1 &
    echo $! >"$dir/etcd/pid"
    for _ in $(seq 100); do curl -s -m 1 "http://$subnet.1:2379/health" | grep -q true && break; sleep 0.1; done

    local superuser replication rewind app
    superuser=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    replication=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    rewind=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    app=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    echo "$app" >"$dir/app-password"
    for node in "${nodes[@]}"; do
        local home="$dir/$node"
        mkdir -p "$home"
        sed -e "s|@NODE_NAME@|$node|g" -e "s|@NODE_ADDRESS@|$(address "$node")|g" \
            -e "s|@ETCD_HOSTS@|$subnet.1:2379|g" -e "s|@DATA_DIR@|$home/data|g" -e "s|@SOCKET_DIR@|$home|g" \
            -e "s|@SUPERUSER_PASSWORD@|$superuser|g" -e "s|@REPLICATION_PASSWORD@|$replication|g" \
            -e "s|@REWIND_PASSWORD@|$rewind|g" "$here/deploy/patroni/patroni.yml" >"$home/patroni.yml"
        chown -R postgres:postgres "$home"
        chmod 700 "$home"
    done
    boot_node "$dir" node1
    wait_for_leader "$dir" 120
    boot_node "$dir" node2
    boot_node "$dir" node3

    sed -e "s|@LISTEN@|127.0.0.1:$haproxy_port|" -e "s|@NODE1@|$(address node1)|" -e "s|@NODE2@|$(address node2)|" \
        -e "s|@NODE3@|$(address node3)|" "$here/deploy/haproxy/haproxy.cfg" >"$dir/haproxy.cfg"
    echo "$haproxy_port" >"$dir/haproxy-port"
    haproxy -f "$dir/haproxy.cfg" -D -p "$dir/haproxy.pid" >"$dir/haproxy.log" 2>&1
    # HAProxy starts with every node up; three failed checks (half a second apart) mark the replicas down.
    sleep 3

    local leader; leader=$(cmd_leader "$dir")
    ip netns exec "$(ns "$leader")" runuser -u postgres -- psql -qAt -h "$dir/$leader" -d postgres -v ON_ERROR_STOP=1 \
        -c "CREATE ROLE shopledger LOGIN PASSWORD '$app'" -c "CREATE DATABASE shopledger OWNER shopledger" >/dev/null
    # Both replicas streaming, one of them synchronous.
    for _ in $(seq 600); do
        local state; state=$(patroni_api "$leader" /cluster)
        if [ "$(grep -o '"state": *"running"' <<<"$state" | wc -l)" -eq 3 ] && grep -q '"role": *"sync_standby"' <<<"$state"; then
            cmd_url "$dir"
            return 0
        fi
        sleep 0.2
    done
    echo "ha-lab: the replicas did not start streaming" >&2
    return 1
}

boot_node() { # DIR NODE
    local dir=$1 node=$2 n; n=$(ns "$2")
    ip netns exec "$n" ip link set eth0 up
    ip netns exec "$n" setsid runuser -u postgres -- patroni "$dir/$node/patroni.yml" >>"$dir/$node/patroni.log" 2>&1 &
}

wait_for_leader() { # DIR SECONDS
    for _ in $(seq $(($2 * 5))); do
        [ -n "$(cmd_leader "$1")" ] && return 0
        sleep 0.2
    done
    echo "ha-lab: no leader within $2 s" >&2
    return 1
}

cmd_leader() {
    for node in "${nodes[@]}"; do
        if [ "$(curl -s -o /dev/null -w '%{http_code}' -m 1 "http://$(address "$node"):8008/primary" || true)" = 200 ]; then
            echo "$node"
            return 0
        fi
    done
}

cmd_url() {
    echo "postgresql://shopledger:$(cat "$1/app-password")@127.0.0.1:$(cat "$1/haproxy-port")/shopledger?target_session_attrs=read-write"
}

cmd_down() {
    local dir=$1
    for node in "${nodes[@]}"; do
        local pids; pids=$(pids_of "$node")
        [ -n "$pids" ] && kill -CONT $pids 2>/dev/null && kill -KILL $pids 2>/dev/null
        ip netns del "$(ns "$node")" 2>/dev/null || true
    done
    [ -f "$dir/haproxy.pid" ] && kill "$(cat "$dir/haproxy.pid")" 2>/dev/null || true
    [ -f "$dir/etcd/pid" ] && kill "$(cat "$dir/etcd/pid")" 2>/dev/null || true
    ip link del "$bridge" 2>/dev/null || true
    rm -f "$lab_file"
}

case "${1:-}" in
    up) cmd_up "$2" "$3" ;;
    down) cmd_down "$2" ;;
    leader) cmd_leader "$2" ;;
    url) cmd_url "$2" ;;
    kill) ip netns exec "$(ns "$2")" ip link set eth0 down; kill -KILL $(pids_of "$2") ;;
    freeze) kill -STOP $(pids_of "$2") ;;
    thaw) kill -CONT $(pids_of "$2") ;;
    cut) ip netns exec "$(ns "$2")" ip link set eth0 down ;;
    mend) ip netns exec "$(ns "$2")" ip link set eth0 up ;;
    boot) boot_node "$2" "$3" ;;
    crash-postgres) kill -KILL "$(head -1 "$2/$3/data/postmaster.pid")" ;;
    switchover)
        leader=$(cmd_leader "$2")
        ip netns exec "$(ns "$leader")" runuser -u postgres -- patronictl -c "$2/$leader/patroni.yml" switchover --force ;;
    *) sed -n '2,20p' "$0" >&2; exit 64 ;;
esac
