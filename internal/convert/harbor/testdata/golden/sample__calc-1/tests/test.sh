#!/bin/bash
# Harbor verifier for sample__calc-1, made by swerve convert harbor.
#
# pytest prints a result line for every test (-rA): swerve's grader requires
# those of the tests that expected_tests.json names to be there and PASSED.
export PYTEST_ADDOPTS="-rA${PYTEST_ADDOPTS:+ $PYTEST_ADDOPTS}"
#
# tests/eval.sh is the dataset's eval script, unchanged: it puts the hidden
# tests into the repository, runs them and echoes
# OMNIGRIL_EXIT_CODE=<exit status of the tests>. The reward is 1 when
# the status in that echo (its last one) is 0, read from the command as bash
# runs it, never from what is printed; and 0 otherwise.
verifier=/logs/verifier
mkdir -p "$verifier"
swerve_status=
swerve_reward() {
	local reward=0
	case "${swerve_status-}" in
	"") echo "swerve: the eval script did not echo OMNIGRIL_EXIT_CODE: its tests did not finish" >&2 ;;
	*[!0-9]*) ;;
	*[!0]*) ;;
	*) reward=1 ;;
	esac
	echo "swerve: OMNIGRIL_EXIT_CODE=${swerve_status:-none}, reward $reward"
	echo "$reward" > "$verifier/reward.txt"
}
trap '{ case $BASH_COMMAND in echo*OMNIGRIL_EXIT_CODE=*) swerve_status=$(eval "printf %s ${BASH_COMMAND#echo}"); swerve_status=${swerve_status##*OMNIGRIL_EXIT_CODE=} ;; esac; } 2>/dev/null' DEBUG
trap swerve_reward EXIT
set -o functrace # the DEBUG trap also sees the commands of the sourced script
source /tests/eval.sh
