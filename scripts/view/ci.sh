#!/usr/bin/env bash
# CI step for `swerve view`: makes sure Debian's chromium is installed (the
# viewer's end-to-end test drives it headless through chromedp) and prints the
# line that makes that test mandatory. Progress goes to stderr; stdout is only
# for eval:
#
#   eval "$(scripts/view/ci.sh)"
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  echo "[view] installing chromium" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
echo "[view] $(chromium --version 2>/dev/null | head -n 1)" >&2
echo "export SWERVE_BROWSER_TESTS=1"
