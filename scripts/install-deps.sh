#!/usr/bin/env bash
# Installs what ShopLedger needs from Debian when it is missing, and nothing more than asked for.
#   --for run  (default): what building and running `shopledger` needs: the PostgreSQL server binaries
#              (initdb, pg_ctl, pg_basebackup), libpq's headers and pkg-config (which the CLibPQ target
#              needs to find them), zlib's headers (AppleSales inflates Apple's gzip'd sales reports
#              with zlib, through the CZlib target). A server host installs no test tools.
#   --for test: that, plus what only the tests need: HAProxy (the load balancer the several-servers
#              fault scenario puts in front of two servers), nginx and openssl (the TLS fault scenario
#              runs deploy/nginx/shopledger.conf with a certificate openssl makes), pgBackRest (the
#              backup-and-restore fault scenario archives WAL, backs up and restores a point in time
#              with it), Chromium and a Korean font (the report tests render
#              the HTML report headless), chromium-driver and python3-venv (the console's browser test,
#              FaultTests.ConsoleBrowserTests, drives Chromium through WebDriver with Selenium and checks
#              every page with axe-core: both from PyPI, pinned in Tests/Browser/requirements.txt, into a
#              venv of the checkout's own, .build/browser-venv, which this script makes), promtool (Debian's prometheus: the alert rules' tests),
#              cmark-gfm (GitHub's Markdown renderer: the report tests
#              render the Markdown reports with it). `make run`'s private cluster is a development one and has no
#              backups: a server host that wants them installs pgbackrest itself (docs/operations.md,
#              "Backups and the restore drill").
#   --for ha:  that of test, plus the failover scenarios' (`make test-ha`): Patroni, etcd (the server) and
#              curl (scripts/ha-lab.sh asks Patroni's REST API with it), iproute2 (network namespaces).
set -euo pipefail

purpose=run
while (($# > 0)); do
    case "$1" in
    --for)
        purpose="${2:-}"
        shift 2 || { echo "error: --for needs run or test" >&2; exit 2; }
        ;;
    --for=*)
        purpose="${1#--for=}"
        shift
        ;;
    *)
        echo "usage: $0 [--for run|test|ha]" >&2
        exit 2
        ;;
    esac
done
case "$purpose" in
run | test | ha) ;;
*)
    echo "error: --for takes run, test or ha, not '$purpose'" >&2
    exit 2
    ;;
esac

missing=()
have_server() {
    command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1 && return 0
    compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null 2>&1
}
have_server || missing+=(postgresql)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkgconf)
{ command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libpq; } || missing+=(libpq-dev)
id postgres >/dev/null 2>&1 || [[ " ${missing[*]} " == *" postgresql "* ]] || missing+=(postgresql)
[[ -f /usr/include/zlib.h ]] || missing+=(zlib1g-dev)
if [[ $purpose == test || $purpose == ha ]]; then
    command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy ]] || missing+=(haproxy)
    command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
    command -v openssl >/dev/null 2>&1 || missing+=(openssl)
    command -v pgbackrest >/dev/null 2>&1 || missing+=(pgbackrest)
    # gpg: the secrets backup (deploy/pgbackrest/shopledger-secrets-backup) is tested end to end with it.
    command -v gpg >/dev/null 2>&1 || missing+=(gnupg)
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    command -v cmark-gfm >/dev/null 2>&1 || missing+=(cmark-gfm)
    # promtool (Debian's prometheus package): the tests check deploy/prometheus/'s rules and run their cases.
    command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
    # python3's http.server plays Patroni's REST API for `standby cluster`'s test.
    command -v python3 >/dev/null 2>&1 || missing+=(python3)
    # A Korean font, so the browser tests' screenshots show the item names (not empty boxes).
    { command -v fc-list >/dev/null 2>&1 && fc-list :lang=ko | grep -q .; } || missing+=(fonts-nanum)
    # The console's browser test: Chromium's WebDriver, and Debian's python3 with venv (for Selenium).
    command -v chromedriver >/dev/null 2>&1 || [[ -x /usr/bin/chromedriver ]] || missing+=(chromium-driver)
    [[ -x /usr/bin/python3 ]] || missing+=(python3)
    { [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1; } \
        || missing+=(python3-venv)
fi
if [[ $purpose == ha ]]; then
    command -v patroni >/dev/null 2>&1 || missing+=(patroni)
    command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    command -v ip >/dev/null 2>&1 || missing+=(iproute2)
fi

# Selenium and axe-selenium-python (pinned in Tests/Browser/requirements.txt) in the checkout's own venv,
# .build/browser-venv, made with Debian's python3 (the system's Python is left as it is); again only when
# the requirements changed since.
browser_venv() {
    [[ $purpose == test || $purpose == ha ]] || return 0
    local root venv requirements
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    venv="$root/.build/browser-venv"
    requirements="$root/Tests/Browser/requirements.txt"
    if [[ -x $venv/bin/python3 ]] && cmp -s "$requirements" "$venv/installed-requirements.txt"; then
        return 0
    fi
    echo "Installing the browser test's Python packages into $venv (from PyPI): selenium, axe-selenium-python"
    mkdir -p "$root/.build"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv/installed-requirements.txt"
}

if ((${#missing[@]} == 0)); then
    browser_venv
    exit 0
fi

echo "Installing missing Debian packages (for $purpose): ${missing[*]}"
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
echo "Installed: ${missing[*]}"
browser_venv
# Debian's packages start their own services where an init system runs: a system PostgreSQL cluster on
# port 5432, HAProxy on its default configuration, and nginx on port 80. ShopLedger runs its own of each
# and uses none of them.
services=()
[[ " ${missing[*]} " == *" postgresql "* ]] && services+=(postgresql)
[[ " ${missing[*]} " == *" haproxy "* ]] && services+=(haproxy)
[[ " ${missing[*]} " == *" nginx "* ]] && services+=(nginx)
[[ " ${missing[*]} " == *" prometheus "* ]] && services+=(prometheus)
if ((${#services[@]} > 0)); then
    echo "Note: Debian's ${services[*]} package(s) may have started their own service(s) (PostgreSQL on port 5432, nginx on port 80);"
    echo "      ShopLedger does not use them. To stop and disable them: sudo systemctl disable --now ${services[*]}"
    echo "      (docs/operations.md, 'Installing on a host')."
fi
