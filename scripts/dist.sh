#!/bin/sh
# Builds the release artifact (`make dist`): dist/shopledger-<version>-linux-<arch>.tar.gz, holding
#   shopledger-<version>-linux-<arch>/shopledger               the binary, release, Swift runtime linked in
#   shopledger-<version>-linux-<arch>/shopledger.service       deploy/systemd/shopledger.service
#   shopledger-<version>-linux-<arch>/shopledger.env.example   deploy/shopledger.env.example
#   shopledger-<version>-linux-<arch>/README.md                deploy/README.md (install, upgrade, logs)
#   shopledger-<version>-linux-<arch>/CHANGELOG.md
#   shopledger-<version>-linux-<arch>/prometheus/              deploy/prometheus (scrape config, alerts on the servers and on Patroni, their cases)
#   shopledger-<version>-linux-<arch>/grafana/                 deploy/grafana (the dashboard)
#   shopledger-<version>-linux-<arch>/pgbackrest/              deploy/pgbackrest (pgBackRest's configuration, the
#                                                              backup units and timers, the secrets backup)
# and its SHA-256 next to it (.sha256, `sha256sum -c` reads it).
#
# The binary is built with --static-swift-stdlib into its own scratch folder (.build-dist, or
# $SHOPLEDGER_DIST_SCRATCH), so that it does not fight `swift build -c release` over .build/release: it
# needs only glibc, libstdc++/libgcc_s and zlib (in every Debian) and libpq5; this script refuses to
# package a binary that needs a Swift library or a library `ldd` cannot find. The version and the
# commit come from the binary's own `--version` (SHOPLEDGER_BUILD_COMMIT names the commit when building
# from an export, as for any build); the arch from `uname -m`.
#
# Progress goes to standard error; standard output is the tarball's path alone, for scripts
# (`make test-faults` hands it to FaultTests.ReleaseArtifactTests as SHOPLEDGER_DIST_TARBALL).
set -eu

cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
scratch=${SHOPLEDGER_DIST_SCRATCH:-.build-dist}

say() { printf 'dist: %s\n' "$*" >&2; }

say "building shopledger (release, --static-swift-stdlib) in $scratch"
"$SWIFT" build -c release --product shopledger --static-swift-stdlib --scratch-path "$scratch" >&2
binary="$scratch/release/shopledger"

# `shopledger 0.9.0 (commit 0123456789ab)`
line=$("$binary" --version)
version=$(printf '%s\n' "$line" | sed -n 's/^shopledger \([0-9][0-9.]*[0-9A-Za-z.+-]*\) (commit \(.*\))$/\1/p')
commit=$(printf '%s\n' "$line" | sed -n 's/^shopledger .* (commit \(.*\))$/\1/p')
if [ -z "$version" ] || [ -z "$commit" ]; then
    say "unexpected --version output: $line"
    exit 1
fi
case $commit in
*-dirty) say "warning: built from a working tree with uncommitted changes ($commit)" ;;
unknown) say "warning: the commit is unknown (not a git checkout; set SHOPLEDGER_BUILD_COMMIT)" ;;
esac
arch=$(uname -m)
name="shopledger-$version-linux-$arch"

# What the binary needs at run time: nothing from the Swift toolchain, nothing missing.
libraries=$(ldd "$binary")
swift_libraries=$(printf '%s\n' "$libraries" |
    grep -E 'libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|libicu|libXCTest|libTesting' || true)
if [ -n "$swift_libraries" ]; then
    say "the binary still needs Swift libraries (was --static-swift-stdlib ignored?):"
    printf '%s\n' "$swift_libraries" >&2
    exit 1
fi
if printf '%s\n' "$libraries" | grep -q 'not found'; then
    say "the binary needs libraries that are not found:"
    printf '%s\n' "$libraries" | grep 'not found' >&2
    exit 1
fi
say "$line; needs: $(printf '%s\n' "$libraries" | awk '{print $1}' | xargs)"

mkdir -p dist
stage=$(mktemp -d "dist/.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
# Debug info stripped (the DWARF is most of the size); the symbol table stays, for backtraces.
strip --strip-debug -o "$stage/$name/shopledger" "$binary"
chmod 755 "$stage/$name/shopledger"
install -m 644 deploy/systemd/shopledger.service "$stage/$name/shopledger.service"
install -m 644 deploy/shopledger.env.example "$stage/$name/shopledger.env.example"
install -m 644 deploy/README.md "$stage/$name/README.md"
install -m 644 CHANGELOG.md "$stage/$name/CHANGELOG.md"
mkdir "$stage/$name/prometheus" "$stage/$name/grafana"
install -m 644 deploy/prometheus/prometheus.yml deploy/prometheus/shopledger-rules.yml \
    deploy/prometheus/shopledger-rules.test.yml deploy/prometheus/patroni-rules.yml \
    deploy/prometheus/patroni-rules.test.yml "$stage/$name/prometheus/"
install -m 644 deploy/grafana/shopledger-dashboard.json "$stage/$name/grafana/"
mkdir "$stage/$name/pgbackrest"
install -m 644 deploy/pgbackrest/pgbackrest.conf deploy/pgbackrest/shopledger-backup@.service \
    deploy/pgbackrest/shopledger-backup-full.timer deploy/pgbackrest/shopledger-backup-diff.timer \
    deploy/pgbackrest/shopledger-secrets-backup.service deploy/pgbackrest/shopledger-secrets-backup.timer \
    "$stage/$name/pgbackrest/"
install -m 755 deploy/pgbackrest/shopledger-secrets-backup "$stage/$name/pgbackrest/"

# The same inputs make the same tarball: sorted names, root-owned, one date (the commit's).
stamp=$(git log -1 --format=%ct 2>/dev/null || date +%s)
tarball="dist/$name.tar.gz"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$stamp" -C "$stage" -cf - "$name" |
    gzip -n -9 >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
(cd dist && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
say "wrote $tarball ($(du -h "$tarball" | cut -f1); binary $(du -h "$stage/$name/shopledger" | cut -f1))"
printf '%s\n' "$(pwd)/$tarball"
