#!/bin/sh
# plant.sh ROOT: the repositories of the leak test (package leaktest), made
# with git alone (no network), one directory of ROOT a way of keeping the
# fix. In each, HEAD and the work tree are at the base commit (add()
# subtracts) on branch main, tag v1 at it; the fix (add() adds) is a later
# commit that the repository keeps:
#   none             nowhere (nothing to strip, nothing to find)
#   branch           on branch fix
#   tag              as tag fixed
#   remote-tracking  as refs/remotes/origin/main, with a remote
#   reflog           only in the reflog
#   unreachable      only as an unreachable object
#   stash            in a stash
# and big: a long history written with git fast-import (BIG_COMMITS
# commits, default 20000, over 2000 files), HEAD moved back 500 commits
# whose future stays on branch future and its tags: the per-box cost of
# the proof and the strip is measured on it.
# The tests' image runs this in a RUN step; the local backend's test runs
# it on the host. Its hash names the image (leaktest.Image).
set -eu
root=$1
mkdir -p "$root"
export GIT_AUTHOR_NAME=calc GIT_AUTHOR_EMAIL=calc@localhost GIT_COMMITTER_NAME=calc GIT_COMMITTER_EMAIL=calc@localhost
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1

fixed='def add(a, b):\n    return a + b\n'
for kind in none branch tag remote-tracking reflog unreachable stash; do
  d=$root/$kind
  mkdir -p "$d/tests"
  cd "$d"
  git init -q -b main .
  printf 'def add(a, b):\n    return a - b\n' >calc.py
  printf 'from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n' >tests/test_ops.py
  git add -A
  GIT_COMMITTER_DATE=2024-01-01T00:00:00Z GIT_AUTHOR_DATE=2024-01-01T00:00:00Z git commit -qm base
  git tag v1
  git checkout -q -b fix
  printf "$fixed" >calc.py
  GIT_COMMITTER_DATE=2024-02-01T00:00:00Z GIT_AUTHOR_DATE=2024-02-01T00:00:00Z git commit -qam 'fix add'
  git checkout -q main
  expire() { git reflog expire --expire=now --expire-unreachable=now --all; }
  case $kind in
  none) git branch -D fix >/dev/null && expire && git prune --expire=now ;;
  branch) ;;
  tag) git tag fixed fix && git branch -D fix >/dev/null ;;
  remote-tracking) git remote add origin https://example.invalid/calc.git && git update-ref refs/remotes/origin/main fix && git branch -D fix >/dev/null ;;
  reflog) git branch -D fix >/dev/null ;;
  unreachable) git branch -D fix >/dev/null && expire ;;
  stash) git branch -D fix >/dev/null && expire && printf "$fixed" >calc.py && git stash -q ;;
  esac
  test -z "$(git status --porcelain)"
  grep -q 'a - b' calc.py
done

# The long history: commit i rewrites file i%2000 in directory pkg(i%40),
# a tag every 1000 commits.
n=${BIG_COMMITS:-20000}
d=$root/big
mkdir -p "$d"
cd "$d"
git init -q -b main .
awk -v n="$n" 'BEGIN {
  for (i = 0; i < n; i++) {
    printf "commit refs/heads/main\nmark :%d\ncommitter dev <dev@localhost> %d +0000\n", i + 1, 1500000000 + i * 3600
    m = sprintf("change %d\n", i); printf "data %d\n%s", length(m), m
    c = ""; for (j = 0; j < 30; j++) c = c sprintf("line %d of %d\n", j, i)
    printf "M 644 inline pkg%d/mod%d.py\ndata %d\n%s\n", i % 40, i % 2000, length(c), c
    if (i % 1000 == 999) printf "tag v%d\nfrom :%d\ntagger dev <dev@localhost> %d +0000\ndata 4\nrel\n\n", int(i / 1000), i + 1, 1500000000 + i * 3600
  }
}' | git fast-import --quiet
git branch future main
git reset -q --hard main~500
git repack -a -d -q
test -z "$(git status --porcelain)"
