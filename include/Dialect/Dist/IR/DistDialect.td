//===- DistDialect.td - the dist dialect -------------------*- tablegen -*-===//
//
// Device meshes, sharding of graph values, and the collectives between the
// ranks of a partitioned model.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECT_DIST_DISTDIALECT_TD
#define LLMC_DIALECT_DIST_DISTDIALECT_TD

include "mlir/IR/OpBase.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::llmc::dist";
  let summary = "Device meshes, shardings and collectives of a sharded model";
  let description = [{
    The `dist` dialect describes how a `graph` model is spread over several
    devices (ranks) and how the ranks exchange data. A `dist.mesh` names a
    grid of ranks with named axes (`tp`, `pp`) and, optionally, the link each
    axis maps to (bandwidth and latency, what the cost model charges). A
    `#dist.sharding` says how a tensor lies on a mesh: for each dimension the
    mesh axes that split it (in order, major first), and the axes over which
    each rank holds only a partial sum. `dist.shard` pins a value's sharding
    (an annotation that propagation starts from and respects). After
    partitioning, each rank's program works on its local pieces and the
    collectives (`dist.all_reduce`, `dist.all_gather`, `dist.reduce_scatter`,
    `dist.all_to_all`, `dist.send`, `dist.recv`) move data between the ranks
    of a group (the ranks that differ only along the collective's axes); they
    lower to calls into the runtime, which runs them on MPI or NCCL.
  }];
  let useDefaultAttributePrinterParser = 1;
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

#endif // LLMC_DIALECT_DIST_DISTDIALECT_TD
