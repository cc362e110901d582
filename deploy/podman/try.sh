#!/bin/sh
# ShopLedger with its own PostgreSQL, in one step, with podman (docs/operations.md, "Trying it in
# containers"): builds the two images if needed and starts deploy/podman/shopledger-try.yaml, a pod
# serving on http://127.0.0.1:8080 in development mode (dev:<uid> tokens, stub receipts; as `make run`).
#
#   deploy/podman/try.sh          build what is missing, start the pod (again), wait for /readyz
#   deploy/podman/try.sh down     stop and remove the pod; the database stays in its volume
#   deploy/podman/try.sh purge    the same, and remove the volume
#
# Needs podman, and the release tarball for this machine in dist/ (`make dist` makes it; this script runs
# it when none is there, which needs the Swift toolchain). The images start from DEBIAN_IMAGE
# (debian:bookworm-slim from Docker Hub); where no registry answers, a Debian bookworm made here with
# debootstrap (as root) is imported instead, as localhost/debian:bookworm-debootstrap.
set -eu
cd "$(dirname "$0")/../.."
yaml=deploy/podman/shopledger-try.yaml
say() { printf 'try: %s\n' "$*" >&2; }

case "${1:-up}" in
    down) podman kube play --down "$yaml"; exit 0 ;;
    purge) podman kube play --down "$yaml" || true; podman volume rm -f shopledger-try-pgdata; exit 0 ;;
    up) ;;
    *) say "usage: $0 [up|down|purge]"; exit 64 ;;
esac

# The base image: the registry's, else one already imported, else debootstrap.
DEBIAN_IMAGE=${DEBIAN_IMAGE:-docker.io/library/debian:bookworm-slim}
local_base=localhost/debian:bookworm-debootstrap
if ! podman image exists "$DEBIAN_IMAGE"; then
    say "pulling $DEBIAN_IMAGE"
    if ! timeout 120 podman pull -q "$DEBIAN_IMAGE" >/dev/null; then
        say "no $DEBIAN_IMAGE from the registry; using $local_base"
        DEBIAN_IMAGE=$local_base
        if ! podman image exists "$local_base"; then
            command -v debootstrap >/dev/null || { say "install debootstrap (apt-get install debootstrap), or set DEBIAN_IMAGE"; exit 69; }
            root=$(mktemp -d)
            trap 'rm -rf "$root"' EXIT
            say "debootstrap bookworm into $root (a few minutes)"
            debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >&2
            tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' - "$local_base" >/dev/null
        fi
    fi
fi

# Podman as root raises each container's open-file and process limits; where it may not (no
# CAP_SYS_RESOURCE, as in some CI sandboxes), containers fail with "error setting rlimit". Then ask for
# limits within reach instead, through a containers.conf of this script's own.
if podman run --rm "$DEBIAN_IMAGE" true 2>&1 | grep -q 'error setting rlimit'; then
    conf=${TMPDIR:-/tmp}/shopledger-try-containers.conf
    printf '[containers]\ndefault_ulimits = ["nofile=16384:16384", "nproc=4096:4096"]\n' > "$conf"
    export CONTAINERS_CONF="$conf"
    say "podman may not raise container limits here: CONTAINERS_CONF=$conf (nofile 16384, nproc 4096)"
fi

# The release tarball, then the two images.
arch=$(uname -m)
if ! ls dist/shopledger-*-linux-"$arch".tar.gz >/dev/null 2>&1; then
    say "no release tarball in dist/: make dist"
    make dist >&2
fi
say "building localhost/shopledger (Dockerfile, TARBALL_FROM=local) and localhost/shopledger-try-postgres"
podman build -q -t localhost/shopledger --build-arg TARBALL_FROM=local --build-arg DEBIAN_IMAGE="$DEBIAN_IMAGE" \
    -f Dockerfile . >/dev/null
podman build -q -t localhost/shopledger-try-postgres --build-arg DEBIAN_IMAGE="$DEBIAN_IMAGE" \
    -f deploy/podman/postgres.Containerfile deploy/podman >/dev/null

say "starting the pod shopledger-try ($yaml)"
podman kube play --replace "$yaml" >/dev/null
i=0
until curl -fsS http://127.0.0.1:8080/readyz >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -ge 120 ]; then
        say "not ready within 120 s:"
        podman logs --tail 20 shopledger-try-postgres >&2 || true
        podman logs --tail 20 shopledger-try-shopledger >&2 || true
        exit 1
    fi
    sleep 1
done
say "ready in ${i} s: http://127.0.0.1:8080 (development mode). Try:"
cat >&2 <<'TRY'
  curl -si localhost:8080/v1/user -H 'idtoken: dev:alice' --data-urlencode phoneNumber=+821012345678 \
    -d FCMtoken=fcm-1 --data-urlencode nick=새싹 -d birth=1994-11-05T08:15:30.000Z -d email= -d gender=1
  curl -si localhost:8080/v1/user/shop/ios -H 'idtoken: dev:alice' -d product=com.memolease.sesac1.sprout2 \
    --data-urlencode "receipt=$(podman exec shopledger-try-shopledger shopledger stub-receipt --product com.memolease.sesac1.sprout2 --price 2500)"
  curl -s localhost:8080/v1/user/shop/myinfo -H 'idtoken: dev:alice'
  podman exec shopledger-try-shopledger shopledger reconcile
  deploy/podman/try.sh down
TRY
