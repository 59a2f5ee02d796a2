#!/usr/bin/env bash
# CI step for the warm pool (--prewarm): measures box-ready latency with and
# without the pool on docker, briefly, so that every CI log carries the
# figure (on stderr). The pool's tests themselves run in `make test`.
#
# Usage: scripts/pool/ci.sh
#   SWERVE_POOL_BACKEND   backend of the figure (default docker; k8s after merge)
#   SWERVE_POOL_TASKS     tasks per mode in the figure (default 8)
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
log=/tmp/swerve-ci-pool.log
if ! SWERVE_DOCKER_TESTS=1 SWERVE_POOL_FIGURES=1 SWERVE_POOL_TASKS="${SWERVE_POOL_TASKS:-8}" SWERVE_POOL_WORK=500ms \
  go test -count=1 -timeout 15m -run TestFigureBoxReady -v ./internal/sandbox/pool/ > "$log" 2>&1; then
  tail -60 "$log" >&2
  echo "warm pool figure failed" >&2
  exit 1
fi
grep -o 'FIGURE.*' "$log" | sed 's/^/  /' >&2
echo "warm pool: figure in $(( $(date +%s) - start ))s" >&2
