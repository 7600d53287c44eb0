#!/bin/sh
# A rank that arrives after the collective set-up limit: rank 1 of
# `llmc_collective_test late` sleeps 20 s before joining; with a 2 s limit
# rank 0 must end the job with an error naming the limit, and mpirun must
# fail, well before the 20 s are over (ctest's timeout).
# Usage: late_rank.sh MPIRUN TEST_BINARY
out=$(LLMC_COLLECTIVE_TIMEOUT=2 "$1" --allow-run-as-root --oversubscribe -np 2 "$2" late 2>&1)
rc=$?
echo "$out"
[ "$rc" -ne 0 ] || { echo "late_rank.sh: mpirun exited 0"; exit 1; }
echo "$out" | grep -q "not every rank arrived within 2 s" ||
  { echo "late_rank.sh: no set-up timeout message"; exit 1; }
