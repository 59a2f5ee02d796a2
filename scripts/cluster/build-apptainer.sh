#!/usr/bin/env bash
# Builds Apptainer from the Go module proxy, once per version, into a cache
# outside the work tree, and prints its bin directory.
#
#   scripts/cluster/build-apptainer.sh       # -> $SWERVE_CI_CACHE/apptainer-1.4.3/bin
#
# Debian bookworm has no Apptainer package. The module proxy serves
# github.com/apptainer/apptainer, but the checksum database has no entry for
# it, so this one module is fetched with GONOSUMDB (nothing else is). Its
# Makefile runs `go clean -cache`, so it builds with a private GOCACHE that
# is thrown away. A cold build takes about 15 minutes on 2 cores.
#
#   scripts/cluster/build-apptainer.sh --deps   # the Debian packages it needs
set -euo pipefail
DEPS="libseccomp-dev libsubid-dev uidmap squashfs-tools cryptsetup-bin fakeroot squashfuse fuse2fs fuse-overlayfs pkg-config"
if [ "${1:-}" = --deps ]; then echo "$DEPS"; exit 0; fi
APPTAINER_VERSION=${APPTAINER_VERSION:-1.4.3}
CACHE=${SWERVE_CI_CACHE:-$HOME/.cache/swerve-ci}
DIR=$CACHE/apptainer-$APPTAINER_VERSION
if [ -x "$DIR/bin/apptainer" ] && [ -f "$DIR/.done" ]; then
  echo "$DIR/bin"; exit 0
fi
need=()
for p in $DEPS; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi
mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9
if [ -f "$DIR/.done" ]; then echo "$DIR/bin"; exit 0; fi
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOTOOLCHAIN=local GOFLAGS= GOCACHE=$work/gocache GONOSUMDB=github.com/apptainer/apptainer
mod=github.com/apptainer/apptainer@v$APPTAINER_VERSION
src=$(cd "$work" && GOMODCACHE=$work/modcache go mod download -json "$mod" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"
# Module zips drop the executable bits of its build scripts.
find . -type f \( -name '*.sh' -o -name '*.pl' -o -name mconfig -o -path '*/scripts/*' -o -path './makeit/*' \) -exec chmod +x {} +
echo "$APPTAINER_VERSION" > VERSION
echo "building apptainer $APPTAINER_VERSION (cold: several minutes)" >&2
./mconfig -b builddir -p "$DIR" >&2
make -C builddir >&2
make -C builddir install >&2
touch "$DIR/.done"
echo "$DIR/bin"
