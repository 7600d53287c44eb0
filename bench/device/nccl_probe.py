#!/usr/bin/env python3
"""What a GPU machine offers issue 12's NCCL path (run there by run_cuda.sh):
the NCCL library and its version, an MPI to bootstrap its unique id
(mpirun, libmpi, mpi4py), and whether NCCL lets two ranks share the one
GPU (torch.distributed, two processes on cuda:0, an all_reduce)."""
import ctypes, glob, os, shutil, subprocess, sys

def nccl_libs():
    found = []
    try:
        import nvidia.nccl
        found += glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so*"))
    except Exception as e:
        print("nvidia.nccl:", e)
    for d in ("/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/local/lib"):
        found += glob.glob(os.path.join(d, "libnccl.so*"))
    return found

def probe():
    for lib in nccl_libs():
        try:
            v = ctypes.c_int()
            ctypes.CDLL(lib).ncclGetVersion(ctypes.byref(v))
            print("NCCL", lib, "version", v.value)
        except Exception as e:
            print("NCCL", lib, "not loadable:", e)
    for tool in ("mpirun", "mpiexec", "orterun", "prterun", "hydra_pmi_proxy"):
        print(tool, shutil.which(tool))
    print("libmpi:", subprocess.run("ldconfig -p | grep -i libmpi; ls /usr/lib/x86_64-linux-gnu/openmpi 2>/dev/null | head -3",
                                    shell=True, capture_output=True, text=True).stdout.strip() or "none")
    try:
        import mpi4py
        print("mpi4py", mpi4py.__version__, mpi4py.get_config())
        from mpi4py import MPI
        print("MPI library:", MPI.Get_library_version().strip()[:200])
    except Exception as e:
        print("mpi4py:", type(e).__name__, e)


def rank_main(rank, q):
    import torch, torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
    try:
        torch.cuda.set_device(0)
        dist.init_process_group("nccl", rank=rank, world_size=2,
                                device_id=torch.device("cuda", 0))
        t = torch.full((4,), float(rank + 1), device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
        q.put((rank, "ok", t.tolist()))
        dist.destroy_process_group()
    except Exception as e:
        q.put((rank, "error", str(e).splitlines()[:6]))

if __name__ == "__main__":
    probe()
    os.environ.setdefault("NCCL_DEBUG", "WARN")
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=rank_main, args=(r, q)) for r in range(2)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(60)
        if p.is_alive():
            p.kill()
            print("two ranks on one GPU: rank timed out (hang)")
    while not q.empty():
        print("two ranks on one GPU:", q.get())
