#!/usr/bin/env bash
# Outside checks of the two OpenAPI documents, with the tools a user of
# another language would point at them (versions pinned in
# scripts/openapi-tools/package-lock.json, installed from the npm registry):
#   1. Redocly's linter (recommended rules): no error in either document;
#   2. openapi-typescript generates a client's types from each, and the
#      smallest valid requests (check.ts) compile against them, so a
#      generated client accepts {to, amount} for a transfer.
# Needs node and npm (CI installs Debian's nodejs and npm when missing).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/scripts/openapi-tools"
cd "$tools"
npm ci --no-audit --no-fund --loglevel=error
bin="$tools/node_modules/.bin"
# Redocly prints a notice about Node.js versions in a box on stderr; its
# verdict is its exit status.
"$bin/redocly" lint --format=summary "$root/openapi.yaml" "$root/fakeserver/openapi-fake.yaml"
mkdir -p gen
"$bin/openapi-typescript" "$root/openapi.yaml" -o gen/v1.ts
"$bin/openapi-typescript" "$root/fakeserver/openapi-fake.yaml" -o gen/fake.ts
"$bin/tsc" -p tsconfig.json
echo "openapi: Redocly lint clean; the generated TypeScript client compiles the smallest requests"
