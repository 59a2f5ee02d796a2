#!/usr/bin/env bash
# CI step for `swerve view`: makes the viewer's browser test mandatory and
# makes sure Debian's chromium is installed (the test drives it headless
# through chromedp). Progress goes to stderr; stdout is only for eval:
#
#   eval "$(scripts/view/ci.sh)"
#
# The export comes first, so that a failed install still leaves the test
# mandatory: it then fails with its reason instead of skipping.
set -euo pipefail
echo "export SWERVE_BROWSER_TESTS=1"
if ! command -v chromium >/dev/null 2>&1; then
  echo "[view] installing chromium" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
echo "[view] $(chromium --version 2>/dev/null | head -n 1)" >&2
