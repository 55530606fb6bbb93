#!/usr/bin/env bash
# Builds the confpay-fakeserver container image: scripts/build-image.sh [TAG]
# (default confpay-fakeserver:dev).
#
# The binary is built here, static (CGO_ENABLED=0), for the host's
# architecture, and copied with this machine's CA bundle into a scratch
# image (scripts/Dockerfile): no base image is pulled. CONTAINER_CLI picks
# docker or podman; by default the first of them that answers.
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-confpay-fakeserver:dev}"

cli="${CONTAINER_CLI:-}"
if [ -z "$cli" ]; then
  for c in docker podman; do
    if command -v "$c" >/dev/null && "$c" info >/dev/null 2>&1; then cli=$c; break; fi
  done
fi
if [ -z "$cli" ]; then
  echo "build-image.sh: neither docker nor podman answers; install one or set CONTAINER_CLI" >&2
  exit 1
fi
certs=/etc/ssl/certs/ca-certificates.crt
if [ ! -r "$certs" ]; then
  echo "build-image.sh: $certs is missing (install ca-certificates)" >&2
  exit 1
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o "$ctx/confpay-fakeserver" ./cmd/confpay-fakeserver
cp "$certs" "$ctx/ca-certificates.crt"
cp scripts/Dockerfile "$ctx/Dockerfile"
"$cli" build --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.source=https://github.com/confpay/confpay-go" \
  -t "$tag" "$ctx"
echo "built $tag with $cli"
