# ShopLedger in a container: the release artifact of `make dist` on Debian bookworm-slim.
#
#   docker build -t shopledger --build-arg SHOPLEDGER_BUILD_COMMIT=$(git rev-parse --short=12 HEAD) .
#       builds the artifact in the Swift image (stage build), then the runtime image from it;
#   make dist && docker build -t shopledger --build-arg TARBALL_FROM=local .
#       the runtime image from the tarball already in dist/ (one for this machine's arch), no Swift image.
#
#   docker run --rm -p 8080:8080 -e SHOPLEDGER_DATABASE_URL=postgres://... -e SHOPLEDGER_FIREBASE_PROJECT=... \
#     -v /etc/shopledger/google-certs.json:/etc/shopledger/google-certs.json:ro \
#     -e SHOPLEDGER_GOOGLE_CERTS=/etc/shopledger/google-certs.json shopledger
#
# Settings are the SHOPLEDGER_* variables of deploy/shopledger.env.example (`--env-file` takes that file as
# it is); the image listens on 0.0.0.0:8080. `docker stop` sends SIGTERM: serve finishes the requests in
# flight within SHOPLEDGER_SHUTDOWN_GRACE (10 s), so give it more (`docker stop -t 30`, the default is 10).
# Run `migrate` first with the same settings: `docker run --rm --env-file ... --entrypoint shopledger
# shopledger migrate` (serve also migrates at start).

ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG DEBIAN_IMAGE=debian:bookworm-slim
# build: make the tarball here; local: take it from dist/ in the build context.
ARG TARBALL_FROM=build

FROM ${SWIFT_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq-dev zlib1g-dev pkg-config binutils \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The commit --version names (.git is not in the build context).
ARG SHOPLEDGER_BUILD_COMMIT=unknown
RUN rm -rf dist \
    && tarball=$(SHOPLEDGER_BUILD_COMMIT=${SHOPLEDGER_BUILD_COMMIT} ./scripts/dist.sh) \
    && mkdir -p /dist && cp "$tarball" "$tarball.sha256" /dist/

FROM scratch AS local
COPY dist/ /dist/

FROM ${TARBALL_FROM} AS tarball

# The tarball checked against its SHA-256 and unpacked: the runtime stage takes the files, not the tarball.
FROM ${DEBIAN_IMAGE} AS unpack
COPY --from=tarball /dist/ /dist/
RUN set -eu; cd /dist; \
    set -- shopledger-*-linux-"$(uname -m)".tar.gz; \
    if [ "$#" -ne 1 ] || [ ! -f "$1" ]; then echo "want one tarball for $(uname -m) in dist/, found: $*" >&2; exit 1; fi; \
    sha256sum -c "$1.sha256"; \
    mkdir /opt/shopledger; \
    tar -xzf "$1" -C /opt/shopledger --strip-components=1

FROM ${DEBIAN_IMAGE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
# libpq5 (the one library of the binary the base image lacks), CA certificates for Apple's and the
# database's TLS.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq5 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin shopledger
COPY --from=unpack /opt/shopledger/shopledger /usr/local/bin/shopledger
COPY --from=unpack /opt/shopledger/README.md /opt/shopledger/shopledger.env.example /opt/shopledger/CHANGELOG.md \
    /usr/local/share/doc/shopledger/
RUN /usr/local/bin/shopledger --version
USER shopledger
ENV SHOPLEDGER_HOST=0.0.0.0 \
    SHOPLEDGER_PORT=8080
EXPOSE 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/shopledger", "serve"]
