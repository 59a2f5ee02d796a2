#!/usr/bin/env bash
# A short tour of swerve: the whole loop on the demo tasks built into the
# binary (swerve demo: every scaffold with the offline oracle/gold model,
# graded in fresh boxes; Docker when an engine answers, else the local
# backend), then the shipped sample tasks: list them, show one, run commands
# in its box, solve one step by step. Needs no API key and no registry. Run
# it with `make demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
SWERVE=${SWERVE:-bin/swerve}
DATA=examples/sample/tasks.jsonl
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$SWERVE" --version
step "$SWERVE" demo --traj_dir "${DEMO_DIR:-swerve-demo/latest}"
step "$SWERVE" tasks ls --dataset "$DATA"
step "$SWERVE" tasks stats --dataset "$DATA"
step "$SWERVE" tasks show --dataset "$DATA" --instance_id sample__calc-1
# The task's box: a fresh copy of its repository, at its base commit.
step "$SWERVE" exec --dataset "$DATA" --instance_id sample__calc-1 -- 'git log --oneline; git status --short; ls'
step "$SWERVE" exec --dataset "$DATA" --instance_id sample__calc-1 --timeout 60s -- 'python3 -m pytest -q 2>&1 | tail -n 3'
# Timeouts kill the command and everything it started; exit code 124.
set +e
step "$SWERVE" exec --dataset "$DATA" --instance_id sample__calc-1 --timeout 1s -- 'sleep 600 & echo started a background sleep; sleep 600'
echo "(exit code $?)"
set -e
# Grading the way the SWE-bench harness does: the gold patch must resolve each
# task and no patch must not (the local box runs the first python3 on PATH
# that has pytest, or SWERVE_LOCAL_PYTHON).
if "$SWERVE" exec --dataset "$DATA" --instance_id sample__calc-1 -- python3 -m pytest --version >/dev/null 2>&1; then
  step "$SWERVE" validate --dataset "$DATA" --backend local
else
  echo "(skipping validate: no python3 on PATH has pytest; apt-get install python3-pytest, or set SWERVE_LOCAL_PYTHON to one that has it)"
fi
# One episode, step by step: r2egym's file_editor runs natively in the box.
step "$SWERVE" solve --dataset "$DATA" --instance_id sample__calc-1 --scaffold r2egym --llm_name oracle/gold --backend local --out swerve-demo/solve
printf '\nFor an interactive shell in the same box:\n  %s shell --dataset %s --instance_id sample__calc-1\n' "$SWERVE" "$DATA"
if [ -d ../shared/data/swebench ]; then
  step "$SWERVE" tasks stats --dataset ../shared/data/swebench/verified-test.parquet
fi
