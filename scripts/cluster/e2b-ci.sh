#!/usr/bin/env bash
# Eval'ed by .ci/run: builds (or finds cached) envd with build-envd.sh and
# prints the exports that make the e2b backend's envd tests mandatory:
#
#   eval "$(scripts/cluster/e2b-ci.sh)"
#   # -> export SWERVE_E2B_TESTS=1 SWERVE_ENVD_BINARY=~/.cache/swerve-ci/envd-<version>-<commit>/envd
#
# envd is not on the Go module proxy, and CI reaches only the proxy, Debian
# and npm: where no envd source is reachable (SWERVE_ENVD_SRC, or the copy
# in $SWERVE_SHARED/src/e2b-infra), it prints one line on stderr saying so and
# exports nothing, and those tests skip with that reason. The e2b tests that
# need no envd (the client against httptest fakes) always run.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if envd=$("$here/build-envd.sh" 2>/tmp/swerve-ci-envd.log); then
  echo "export SWERVE_E2B_TESTS=1 SWERVE_ENVD_BINARY=$envd"
else
  echo "e2b: envd tests cannot run on this machine: $(tail -n 1 /tmp/swerve-ci-envd.log) (envd is not on the Go module proxy; its source e2b-dev/infra is needed)" >&2
fi
