#!/bin/bash
# Harbor's convention: the verifier's verdict goes to /logs/verifier/reward.txt.
mkdir -p /logs/verifier
cd /testbed
if python3 -m pytest -rA /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
