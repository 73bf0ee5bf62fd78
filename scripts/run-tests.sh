#!/usr/bin/env bash
# npm test: the whole suite first builds or finds every tool it runs against
# (prepare-test-infra.sh: instant when cached), one after the other, so that a cold machine's
# builds never run beside timing-sensitive tests. Given files (npm test -- test/x.test.ts),
# it runs them at once: each tool is then built on first use by what needs it (FerretDB by the
# global setup, the Kubernetes control plane by its helper, the agent server by the service).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$#" -eq 0 ]; then bash "$here/prepare-test-infra.sh"; fi
exec "$here/../node_modules/.bin/vitest" run "$@"
