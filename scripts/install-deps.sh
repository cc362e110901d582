#!/usr/bin/env bash
# Installs what ShopLedger needs from Debian when it is missing: the PostgreSQL server binaries
# (initdb, pg_ctl, pg_basebackup), libpq's headers and pkg-config (which the CLibPQ target needs to find
# them), HAProxy (the load balancer the several-servers fault scenario puts in front of two servers),
# zlib's headers (the browser test decodes its screenshot with zlib), Chromium and a Korean font
# (the browser test renders the HTML report headless).
set -euo pipefail

missing=()
have_server() {
    command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1 && return 0
    compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null 2>&1
}
have_server || missing+=(postgresql)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkgconf)
{ command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libpq; } || missing+=(libpq-dev)
command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy ]] || missing+=(haproxy)
[[ -f /usr/include/zlib.h ]] || missing+=(zlib1g-dev)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# A Korean font, so the browser test's screenshot shows the item names (not empty boxes).
{ command -v fc-list >/dev/null 2>&1 && fc-list :lang=ko | grep -q .; } || missing+=(fonts-nanum)
id postgres >/dev/null 2>&1 || [[ " ${missing[*]} " == *" postgresql "* ]] || missing+=(postgresql)

if ((${#missing[@]} == 0)); then
    exit 0
fi

echo "Installing missing Debian packages: ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        sudo="sudo"
    else
        echo "error: not root and no sudo; install these packages first: ${missing[*]}" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
# Debian's packages start a system cluster on port 5432 and HAProxy on its default configuration where
# an init system runs; ShopLedger runs its own of both and needs neither.
echo "Installed: ${missing[*]}"
