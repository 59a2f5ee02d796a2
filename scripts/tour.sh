#!/usr/bin/env bash
# The newcomer test: walk the README's "Set up" and "A tour" the way someone
# who has just cloned the repository would, and fail when a command shown
# there fails or no longer prints what the README says it prints.
#
# What runs comes from README.md itself, not from this script: every fenced
# block right after a `<!-- tour -->` line. In such a block a command may span
# lines with a trailing `\`; comment lines are prose; a `# => TEXT` comment
# (at the end of the command's last line, or on a line of its own right
# below it) is what the README promises the command prints: the command's
# output (stdout and stderr) must contain TEXT. `# => exit N` promises exit
# code N instead of 0. Editing those blocks changes what is tested.
#
# Each command runs with bash (pipefail) in the root of a fresh `git clone` of
# this checkout's HEAD (uncommitted and untracked files are not in it), with
# this machine's own environment and PATH, stdin from /dev/null, and `..`
# holding `shared` (a link to $SWERVE_SHARED), so the README's ../shared
# paths resolve. Commands that need what CI lacks (an API key, a model
# endpoint, the network) are skipped by the rules below, each printed with
# its reason. It keeps going after a failure and lists every failure at the
# end, with the command's exit code and the tail of its output. Afterwards
# the clone's `git status` must be clean: what the tour writes is ignored,
# and no tracked file changed.
#
# Usage: scripts/tour.sh [--list]
#   --list               print what the checkout's README.md would run, skip and
#                        check, and run nothing
#   SWERVE_SHARED        the shared data and the realtasks kit (default: ../shared
#                        beside this checkout)
#   SWERVE_TOUR_TIMEOUT  seconds one command may take (default 1800)
#   SWERVE_TOUR_SKIP     an extended regular expression: also skip the commands it
#                        matches (for a local run, e.g. 'swerve gc' on a machine
#                        others are using); CI leaves it unset
#   SWERVE_TOUR_KEEP=1   keep the clone and the logs (kept anyway on failure)
set -uo pipefail
case "${1:-}" in -h|--help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
src=$(cd "$(dirname "$0")/.." && pwd)
t0=$(date +%s)
say() { printf '[tour %4ss] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }
die() { printf 'tour: %s\n' "$*" >&2; exit 2; }

# Commands the tour does not run: an extended regular expression matched
# against the command as the README writes it (continuation lines joined),
# then the reason, printed. The first rule that matches wins.
skip_rules=(
  '^make test( |$)'$'\t''the whole suite (tens of minutes); .ci/run runs it after the tour, with Docker tests mandatory'
  'OPENAI_API_KEY=|ANTHROPIC_API_KEY='$'\t''needs a model API key, which CI does not have'
  '(--llm_name|--llm-name|--model_name|--model-name) (openai|anthropic|hosted_vllm|litellm)/'$'\t''needs a model endpoint, which CI does not have'
  '--dataset [A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+( |$)'$'\t''reads a dataset from the Hugging Face Hub (network), which CI cannot reach'
  '(^| )build_out/'$'\t''reads what the `swerve build` line above writes, and that line is skipped'
  '^git clone '$'\t''clones the repository; the tour itself runs in a fresh clone of this checkout'
  'gc --prepared_images'$'\t''would remove every history-stripped image on the machine, which the tests after the tour then rebuild (minutes); the plain `gc` lines above run'
)
# Commands that want a terminal: run under script(1) (a real pseudo-terminal),
# fed this session, whose output must show the sum (the typed line holds the
# expression, not its value).
interactive_re='(^| )bin/swerve shell( |$)'
interactive_session=$'echo tour-shell-$((6*7))\nexit\n'
interactive_expect='tour-shell-42'

timeout_s=${SWERVE_TOUR_TIMEOUT:-1800}

# The README's tour blocks, as records: "C<TAB>command" then its promises,
# "E<TAB>text" (output contains text) or "X<TAB>n" (exit code n).
parse() {
  awk '
    function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    function promise(p) {
      p = trim(p)
      if (p ~ /^exit [0-9]+$/) { sub(/^exit /, "", p); print "X\t" p } else if (p != "") print "E\t" p
    }
    # Split a line at its shell comment (a # outside quotes, at the start of
    # a word): code gets what comes before, comment the rest.
    function split_comment(s,    i, c, q, prev) {
      q = ""; prev = " "
      for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (q == "\047") { if (c == "\047") q = "" }
        else if (c == "\\") { i++; c = "x" }
        else if (q == "\"") { if (c == "\"") q = "" }
        else if (c == "\047" || c == "\"") q = c
        else if (c == "#" && prev ~ /[ \t]/) { code = substr(s, 1, i - 1); comment = substr(s, i); return }
        prev = c
      }
      code = s; comment = ""
    }
    /^<!-- tour -->[ \t]*$/ { armed = 1; next }
    armed && /^```/ { inblock = 1; armed = 0; cmd = ""; cont = 0; next }
    armed && !/^[ \t]*$/ { armed = 0 }
    inblock && /^```/ {
      if (cont) print "P\tunfinished command at the end of a block: " cmd
      inblock = 0; next
    }
    !inblock { next }
    {
      split_comment($0)
      line = trim(code)
      if (line == "" && !cont) {
        if (comment ~ /^# =>/) {
          if (last) promise(substr(comment, 5)); else print "P\ta promise before any command: " $0
        }
        next
      }
      more = (line ~ /\\$/)
      if (more) line = trim(substr(line, 1, length(line) - 1))
      cmd = (cont ? cmd " " line : line)
      cont = more
      if (comment != "" && cont) { print "P\ta comment on a continued line: " $0; next }
      if (!cont) { print "C\t" cmd; last = 1; if (comment ~ /^# =>/) promise(substr(comment, 5)) }
    }
  ' "$1"
}

# Parse a README into cmds, expects (newline-separated texts) and exits.
load() {
  cmds=() expects=() exits=()
  local kind text
  while IFS=$'\t' read -r kind text; do
    case "$kind" in
      C) cmds+=("$text"); expects+=(""); exits+=(0) ;;
      E) expects[${#cmds[@]}-1]+="$text"$'\n' ;;
      X) exits[${#cmds[@]}-1]=$text ;;
      P) die "$1: $text" ;;
    esac
  done < <(parse "$1")
  [ ${#cmds[@]} -gt 0 ] || die "$1 has no <!-- tour --> blocks: nothing to walk"
}

# Sets reason to why command $1 is skipped (empty: it runs); marks the rule used.
skip_reason() {
  local r re
  reason=""
  for r in "${!skip_rules[@]}"; do
    re=${skip_rules[$r]%%$'\t'*}
    if [[ $1 =~ $re ]]; then used[$r]=1; reason=${skip_rules[$r]#*$'\t'}; return; fi
  done
  if [ -n "${SWERVE_TOUR_SKIP:-}" ] && [[ $1 =~ $SWERVE_TOUR_SKIP ]]; then
    reason="matches SWERVE_TOUR_SKIP"
  fi
}

# A rule that matched nothing is only reported: the line it was for may have
# been fixed to run in CI.
stale_rules() {
  local r
  for r in "${!skip_rules[@]}"; do
    [ -n "${used[$r]:-}" ] || echo "note: skip rule /${skip_rules[$r]%%$'\t'*}/ matched no command (stale?)"
  done
}

used=()
if [ "${1:-}" = --list ]; then
  load "$src/README.md"
  for i in "${!cmds[@]}"; do
    skip_reason "${cmds[$i]}"
    if [ -n "$reason" ]; then printf 'skip %d: %s\n        (%s)\n' $((i + 1)) "${cmds[$i]}" "$reason"; continue; fi
    printf 'run  %d: %s\n' $((i + 1)) "${cmds[$i]}"
    [ "${exits[$i]}" = 0 ] || printf '        exit code %s\n' "${exits[$i]}"
    while IFS= read -r w; do [ -z "$w" ] || printf '        output contains "%s"\n' "$w"; done <<<"${expects[$i]}"
    [[ ! ${cmds[$i]} =~ $interactive_re ]] || printf '        on a terminal, typed: %q\n' "$interactive_session"
  done
  stale_rules
  exit 0
fi

shared=${SWERVE_SHARED:-$src/../shared}
[ -d "$shared" ] || die "shared data not found at $shared (set SWERVE_SHARED): the tour's ../shared paths need it"
shared=$(cd "$shared" && pwd)
command -v script >/dev/null || die "script(1) (util-linux) is needed for the tour's interactive commands"

work=$(mktemp -d "${TMPDIR:-/tmp}/swerve-tour.XXXXXX")
clone=$work/swerve
logs=$work/logs
mkdir -p "$logs"
rev=$(git -C "$src" rev-parse HEAD) || die "$src is not a git checkout"
if [ -n "$(git -C "$src" status --porcelain --untracked-files=no -- README.md scripts examples Makefile)" ]; then
  say "note: $src has uncommitted changes; the tour runs the committed HEAD ${rev:0:12}"
fi
git clone -q --no-checkout "$src" "$clone" && git -C "$clone" checkout -q "$rev" \
  || die "could not clone $src at $rev into $clone"
ln -s "$shared" "$work/shared"
cd "$clone" || die "no clone at $clone"
say "fresh clone of ${rev:0:12} in $clone; ../shared -> $shared"


load README.md
say "${#cmds[@]} commands in README.md's tour blocks"

failures=()
ran=0 skipped=0
for i in "${!cmds[@]}"; do
  cmd=${cmds[$i]}
  n=$((i + 1))
  skip_reason "$cmd"
  if [ -n "$reason" ]; then
    say "skip $n: $cmd"
    say "        ($reason)"
    skipped=$((skipped + 1))
    continue
  fi
  out=$logs/$n.log
  want=${expects[$i]}
  say "run  $n: $cmd"
  s0=$(date +%s)
  if [[ $cmd =~ $interactive_re ]]; then
    want+="$interactive_expect"$'\n'
    printf '%s' "$interactive_session" | timeout -k 10 "$timeout_s" script -qec "$cmd" /dev/null >"$out" 2>&1
  else
    timeout -k 10 "$timeout_s" bash -o pipefail -c "$cmd" </dev/null >"$out" 2>&1
  fi
  rc=$?
  took=$(( $(date +%s) - s0 ))
  ran=$((ran + 1))
  problems=()
  if [ "$rc" -ne 0 ] && [ "$took" -ge "$timeout_s" ]; then
    problems+=("timed out after ${timeout_s}s (SWERVE_TOUR_TIMEOUT)")
  elif [ "$rc" -ne "${exits[$i]}" ]; then
    problems+=("exit code $rc, the README expects ${exits[$i]}")
  fi
  while IFS= read -r w; do
    [ -n "$w" ] || continue
    grep -qF -- "$w" "$out" || problems+=("its output does not contain \"$w\", which the README shows")
  done <<<"$want"
  if [ ${#problems[@]} -eq 0 ]; then
    say "        ok, ${took}s, $(wc -l <"$out") lines of output ($out)"
    continue
  fi
  failures+=("$n: $cmd")
  for p in "${problems[@]}"; do say "        FAILED: $p"; done
  echo "        --- last 40 lines of its output ($out):"
  tail -n 40 "$out" | sed 's/^/        | /'
  echo "        ---"
done
stale_rules
# A newcomer's clone stays clean: what the tour writes is ignored by git, and
# no tracked file changes.
dirty=$(git status --porcelain 2>&1)
if [ -n "$dirty" ]; then
  failures+=("git status: the tour left files git does not ignore, or changed tracked ones")
  say "FAILED: after the tour, git status in the clone is not clean:"
  printf '%s\n' "$dirty" | head -n 20 | sed 's/^/        | /'
fi

summary="${#cmds[@]} commands: $ran ran, $skipped skipped, ${#failures[@]} failed, in $(( $(date +%s) - t0 ))s"
if [ ${#failures[@]} -gt 0 ]; then
  say "tour FAILED: $summary"
  for f in "${failures[@]}"; do say "  failed $f"; done
  say "the clone and every command's output are kept in $work"
  exit 1
fi
say "tour passed: $summary"
if [ -n "${SWERVE_TOUR_KEEP:-}" ]; then
  say "kept $work"
else
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
fi
