#!/usr/bin/env bash
# Builds E2B's in-sandbox daemon envd (static, CGO_ENABLED=0) from a source
# checkout of e2b-dev/infra, once per version, into a cache outside the work
# tree, and prints the binary's path.
#
#   scripts/cluster/build-envd.sh     # -> $SWERVE_CI_CACHE/envd-<version>-<commit>/envd
#
# envd is not on the Go module proxy, so it needs its source:
#   SWERVE_ENVD_SRC  a checkout of e2b-dev/infra (the directory holding
#                    packages/envd), or its git directory; default: the
#                    unmodified copy of the parts envd needs in
#                    $SWERVE_SHARED/src/e2b-infra (SWERVE_SHARED defaults to
#                    ../shared beside the repository).
# envd's module replaces packages/shared with ../shared, whose go.mod pulls
# hundreds of modules; envd uses four small packages of it (filesystem, id,
# keys, smap; of id only id.go, as object.go needs a module the proxy
# refuses), so those alone are copied next to envd into a scratch
# directory with a go.mod of their own. Nothing is written to the work tree.
# It exits 2, with one line on stderr, when no source is reachable.
set -euo pipefail
CACHE=${SWERVE_CI_CACHE:-$HOME/.cache/swerve-ci}
repo=$(cd "$(dirname "$0")/../.." && pwd)
SRC=${SWERVE_ENVD_SRC:-${SWERVE_SHARED:-$repo/../shared}/src/e2b-infra}
if [ ! -e "$SRC" ]; then
  echo "envd source not found at $SRC (set SWERVE_ENVD_SRC to a checkout of e2b-dev/infra)" >&2
  exit 2
fi
shared_pkgs="filesystem id keys smap"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Take the source out of a git directory (bare mirror or work tree) or a
# plain directory.
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 && git -C "$SRC" cat-file -e HEAD:packages/envd/go.mod 2>/dev/null; then
  commit=$(git -C "$SRC" rev-parse --short=12 HEAD)
  paths=(packages/envd)
  for p in $shared_pkgs; do paths+=("packages/shared/pkg/$p"); done
  git -C "$SRC" archive HEAD "${paths[@]}" | tar -x -C "$tmp"
elif [ -f "$SRC/packages/envd/go.mod" ]; then
  commit=local
  mkdir -p "$tmp/packages/shared/pkg"
  cp -r "$SRC/packages/envd" "$tmp/packages/"
  for p in $shared_pkgs; do cp -r "$SRC/packages/shared/pkg/$p" "$tmp/packages/shared/pkg/"; done
else
  echo "no packages/envd under $SRC (set SWERVE_ENVD_SRC to a checkout of e2b-dev/infra)" >&2
  exit 2
fi
version=$(sed -n 's/^const Version = "\([^"]*\)".*/\1/p' "$tmp/packages/envd/pkg/version.go")
DIR=$CACHE/envd-${version:-unknown}-$commit
if [ -x "$DIR/envd" ] && [ -f "$DIR/.done" ]; then
  echo "$DIR/envd"; exit 0
fi
mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9
if [ -f "$DIR/.done" ]; then echo "$DIR/envd"; exit 0; fi
echo "building envd $version ($commit)" >&2
find "$tmp/packages/shared" -name '*_test.go' -delete
# id's typed-object half needs github.com/sumup/typeid, which the module
# proxy refuses; envd uses only id.Generate.
rm -f "$tmp/packages/shared/pkg/id/object.go"
printf 'module github.com/e2b-dev/infra/packages/shared\n\ngo 1.26\n' > "$tmp/packages/shared/go.mod"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
(cd "$tmp/packages/shared" && go mod tidy >&2)
cd "$tmp/packages/envd"
go build -trimpath -ldflags "-s -w -X=main.commitSHA=$commit" -o "$DIR/envd.tmp" . >&2
mv "$DIR/envd.tmp" "$DIR/envd"
touch "$DIR/.done"
echo "$DIR/envd"
