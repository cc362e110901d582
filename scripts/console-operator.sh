#!/usr/bin/env bash
# `make run`'s console operator: on the first run, an `admin` operator of the private cluster with a random
# password kept in .shopledger/console-admin-password (private to its owner); then prints how to sign in.
#   scripts/console-operator.sh SHOPLEDGER_BINARY CONSOLE_URL
set -euo pipefail
export SHOPLEDGER_LOG_LEVEL=warning

binary="$1"
url="$2"
folder="${SHOPLEDGER_DATA_DIR:-.shopledger}"
password_file="$folder/console-admin-password"

if [[ ! -s $password_file ]]; then
    mkdir -p "$folder"
    (
        umask 077
        # 24 random bytes as base64: 32 characters, well past the 12 a password needs.
        head -c 24 /dev/urandom | base64 | tr -d '\n' >"$password_file.new"
    )
    # The schema first (the private cluster starts and stops with each command), then the operator.
    "$binary" migrate >/dev/null
    if "$binary" operators add admin --role admin --password-file "$password_file.new" >/dev/null; then
        mv "$password_file.new" "$password_file"
    else
        # An `admin` exists already (the password file was removed): give it the new password.
        "$binary" operators reset-password admin --password-file "$password_file.new" >/dev/null
        mv "$password_file.new" "$password_file"
    fi
fi
echo "ShopLedger: operators' console on $url: sign in as 'admin' with the password in $password_file"
