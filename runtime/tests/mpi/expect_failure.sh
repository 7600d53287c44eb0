#!/bin/sh
# Runs `llmc_collective_test MODE` as a 2-rank job that must fail: mpirun's
# exit must be non-zero and the output must hold MESSAGE, well within
# ctest's timeout (no hang). The set-up limit is 2 s.
#   late   rank 1 joins 20 s late: rank 0 ends the job at the limit
#   short  rank 1 receives fewer bytes than it expects while rank 0 goes on
#          to an all-reduce: rank 1's error ends the job
# Usage: expect_failure.sh MPIRUN TEST_BINARY MODE MESSAGE
out=$(LLMC_COLLECTIVE_TIMEOUT=2 "$1" --allow-run-as-root --oversubscribe -np 2 "$2" "$3" 2>&1)
rc=$?
echo "$out"
[ "$rc" -ne 0 ] || { echo "expect_failure.sh: mpirun exited 0"; exit 1; }
echo "$out" | grep -q "$4" ||
  { echo "expect_failure.sh: no '$4' in the output"; exit 1; }
