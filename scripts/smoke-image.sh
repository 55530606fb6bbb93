#!/usr/bin/env bash
# Builds the container image and smoke-tests it (CI runs this):
#   scripts/smoke-image.sh [TAG]
# The container runs with the host's network on a free loopback port, with
# an admin token, as user 65532 and with no shell. scripts/smokeimage then
# checks /_fake's guard (401 without the token), makes accounts through
# /_fake, pays through /v1, receives the webhook delivered from the container
# on this host, and reads the balance through /_fake/prove and /v1. Then it
# checks the compose example's topology (examples/compose): the receiver,
# built with the run stage of examples/compose/receiver.Dockerfile, in its
# own container in the server's network namespace, started with the
# subscription's secret, verifies and prints a delivery.
# CONTAINER_CLI picks docker or podman (default: the first that answers);
# with podman, containers run with --runtime runc and, unless
# CONTAINERS_CONF names one, a containers.conf without default ulimits.
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-confpay-fakeserver:smoke}"

cli="${CONTAINER_CLI:-}"
if [ -z "$cli" ]; then
  for c in docker podman; do
    if command -v "$c" >/dev/null && "$c" info >/dev/null 2>&1; then cli=$c; break; fi
  done
fi
[ -n "$cli" ] || { echo "smoke-image.sh: neither docker nor podman answers" >&2; exit 1; }
run=("$cli")
tmp=$(mktemp -d)
cid=""
rname="confpay-receiver-smoke-$$"
cleanup() {
  "${run[@]}" rm -f "$rname" >/dev/null 2>&1 || true
  if [ -n "$cid" ]; then "${run[@]}" rm -f "$cid" >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ "$(basename "$cli")" = podman ]; then
  run=("$cli" --runtime runc)
  if [ -z "${CONTAINERS_CONF:-}" ]; then
    printf '[containers]\ndefault_ulimits = []\n' >"$tmp/containers.conf"
    export CONTAINERS_CONF="$tmp/containers.conf"
  fi
fi
export CONTAINER_CLI="$cli"

scripts/build-image.sh "$tag"

user=$("$cli" image inspect --format '{{.Config.User}}' "$tag")
[ "$user" = "65532:65532" ] || { echo "smoke: the image runs as '$user', want 65532:65532" >&2; exit 1; }
if "${run[@]}" run --rm --network none --entrypoint /bin/sh "$tag" -c true >/dev/null 2>&1; then
  echo "smoke: the image has a shell" >&2; exit 1
fi
echo "smoke: the image runs as 65532:65532 and has no shell"

go build -o "$tmp/smokeimage" ./scripts/smokeimage
port=$("$tmp/smokeimage" -free-port)
CONFPAY_FAKESERVER_ADMIN_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export CONFPAY_FAKESERVER_ADMIN_TOKEN
cid=$("${run[@]}" run -d --network host -e CONFPAY_FAKESERVER_ADMIN_TOKEN "$tag" -addr "0.0.0.0:$port")
if ! "$tmp/smokeimage" -url "http://127.0.0.1:$port"; then
  echo "-- container log:" >&2
  "${run[@]}" logs "$cid" >&2 || true
  exit 1
fi
# The log never holds the token.
if "${run[@]}" logs "$cid" 2>&1 | grep -q "$CONFPAY_FAKESERVER_ADMIN_TOKEN"; then
  echo "smoke: the container's log holds the admin token" >&2; exit 1
fi

# The compose topology. The receiver's image is the run stage of
# examples/compose/receiver.Dockerfile (everything from its FROM scratch),
# with the binary built here instead of in a golang image (no registry).
rtag="confpay-receiver:smoke"
mkdir "$tmp/receiver"
CGO_ENABLED=0 GOOS=linux go build -trimpath -o "$tmp/receiver/receiver" ./examples/compose/receiver
sed -n '/^FROM scratch/,$p' examples/compose/receiver.Dockerfile |
  sed 's|^COPY --from=build /receiver /receiver$|COPY receiver /receiver|' >"$tmp/receiver/Dockerfile"
grep -q '^COPY receiver /receiver$' "$tmp/receiver/Dockerfile" ||
  { echo "smoke: examples/compose/receiver.Dockerfile's run stage changed; update this script" >&2; exit 1; }
"$cli" build -t "$rtag" "$tmp/receiver" >/dev/null
rport=$("$tmp/smokeimage" -free-port)
if ! "$tmp/smokeimage" -url "http://127.0.0.1:$port" -receiver "127.0.0.1:$rport" \
  -receiver-start "${run[*]} run -d --name $rname --network container:$cid -e CONFPAY_WEBHOOK_SECRET -e ADDR=127.0.0.1:$rport $rtag" \
  -receiver-logs "${run[*]} logs $rname"; then
  echo "-- container log:" >&2
  "${run[@]}" logs "$cid" >&2 || true
  exit 1
fi
echo "smoke: image $tag passed"
