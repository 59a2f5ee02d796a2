#!/usr/bin/env bash
# CI step for the apptainer backend. Builds Apptainer (cached by version),
# lets it apply resource limits on this machine, converts the images the
# tests use to .sif files (cached by image id), and prints the one line
# .ci/run evaluates:
#
#   eval "$(scripts/cluster/apptainer-ci.sh)"
#   # -> export SWERVE_APPTAINER_TESTS=1 SWERVE_SIF_CACHE=... PATH=...:$PATH
#
# Everything but that line goes to stderr. A warm run (Apptainer built, sif
# files converted) takes a few seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=${SWERVE_CI_CACHE:-$HOME/.cache/swerve-ci}
SIF=${SWERVE_SIF_CACHE:-$CACHE/sif}
t0=$(date +%s)
log() { printf '[apptainer-ci %4ss] %s\n' "$(( $(date +%s) - t0 ))" "$*" >&2; }

bin=$(scripts/cluster/build-apptainer.sh | tail -n 1)
export PATH=$bin:$PATH
log "apptainer $(apptainer --version 2>/dev/null | awk '{print $NF}') at $bin"

# With systemd cgroups on (Apptainer's default) and no systemd as init,
# every --cpus/--memory/--pids-limit start fails; the cgroupfs manager works
# under cgroup v1 here. This edits only the CI's own copy of Apptainer.
conf=$bin/../etc/apptainer/apptainer.conf
if [ "$(cat /proc/1/comm 2>/dev/null)" != systemd ] && grep -q '^systemd cgroups = yes' "$conf"; then
  sed -i 's/^systemd cgroups = yes/systemd cgroups = no/' "$conf"
  log "apptainer.conf: systemd cgroups = no (no systemd here)"
fi

# The conformance suite's image, the leak tests' (scripts/leak-image.sh)
# and the five kit images, converted once per image id (the backend looks
# them up the same way: SIF/<id>.sif).
mkdir -p "$SIF"
images=("${SWERVE_TEST_IMAGE:-swerve-test-base:bookworm}" "$(scripts/leak-image.sh --name)")
for n in 15499 16139 16901 16938 17087; do
  images+=("swebench/sweb.eval.x86_64.django_1776_django-$n:latest")
done
for img in "${images[@]}"; do
  id=$(docker image inspect -f '{{.Id}}' "$img" 2>/dev/null) || { log "image $img missing: not converted"; continue; }
  id=${id#sha256:}
  out=$SIF/$id.sif
  [ -f "$out" ] && continue
  (
    flock 9
    [ -f "$out" ] && exit 0
    log "converting $img (cold: up to a few minutes)"
    nice -n 10 apptainer build -F "$out.tmp.$$" "docker-daemon://$img" >/tmp/swerve-ci-apptainer-build.log 2>&1 ||
      { tail -20 /tmp/swerve-ci-apptainer-build.log >&2; rm -f "$out.tmp.$$"; exit 1; }
    mv "$out.tmp.$$" "$out"
  ) 9>"$SIF/$id.lock"
done
log "sif files ready in $SIF"
echo "export SWERVE_APPTAINER_TESTS=1 SWERVE_SIF_CACHE='$SIF' PATH='$bin':\"\$PATH\""
