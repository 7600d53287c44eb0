#!/bin/bash
# Issue 12's CPU benchmark on a bigger host (the GPU machine's 16 cores):
# one process against two tensor-parallel ranks and two pipeline stages,
# run from DEV (this script, llmc-run, libllmc_mpi.so, LLVM's libomp.so.5,
# art/{one,tp2,pp2}: the Qwen3-0.6B shape compiled here for
# cpu:x86-64-v3,cores=16 without weights). The weights are filled with a
# constant byte (0x11: q4_0 blocks of scale 6.6e-4 and small quants; a
# kernel's time does not depend on the values). Writes $OUT/log.
#   carry [".dev2"], command: bash .dev2/run_mpi_cpu.sh
cd "$(dirname "$0")"
exec > >(tee $OUT/log) 2>&1
export LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH LLMC_MPI_PLUGIN=$PWD/libllmc_mpi.so
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket|NUMA node\(s\)"; mpirun --version | head -1
python3 - <<'PY'
import json, os
for meta in ["art/one", "art/tp2", "art/pp2", "art/pp2/stage1"]:
    m = json.load(open(meta + "/metadata.json"))
    d = m.get("dist")
    files = [m["weights"]["file"]] if not d else []
    if d:
        # A pipeline stage holds the blobs of its ranks; tp: every rank's.
        ranks = range(d["ranks"])
        if "pp" in d:
            ranks = [d.get("stage", 0)]
        files = [m["weights"]["file"].replace("{rank}", str(r)) for r in ranks]
    for f in files:
        with open(os.path.join(meta, f), "wb") as out:
            left = m["weights"]["bytes"]
            block = b"\x11" * (64 << 20)
            while left:
                n = min(left, len(block)); out.write(block[:n]); left -= n
PY
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2"
B="-p ${PP:-512} -n ${TG:-128} -r ${REPS:-3} --vs none"
for t in 16 8; do echo "== one process, $t threads"; ./llmc-run bench art/one $B -t $t | grep -E "pp|tg|memory"; done
echo "== tp=2, 8 threads a rank"; $MPI -x LLMC_THREADS=8 ./llmc-run bench art/tp2 $B | grep -E "pp|tg|memory|error"
echo "== pp=2, 8 threads a rank"; $MPI -x LLMC_THREADS=8 ./llmc-run bench art/pp2 $B | grep -E "pp|tg|memory|error"
echo "== tp=2, 16 threads a rank (oversubscribed)"; $MPI -x LLMC_THREADS=16 ./llmc-run bench art/tp2 $B | grep -E "pp|tg|error"
date
