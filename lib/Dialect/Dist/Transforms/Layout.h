//===- Layout.h - a value's layout on a mesh, as the passes see it -*- C++
//-*-===//
//
// The working form of #dist.sharding in dist-propagate and dist-partition:
// the axes splitting each dimension and the axes of a partial sum.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_LIB_DIALECT_DIST_TRANSFORMS_LAYOUT_H
#define LLMC_LIB_DIALECT_DIST_TRANSFORMS_LAYOUT_H

#include "Dialect/Dist/IR/Dist.h"

namespace llmc::dist {

using Axes = llvm::SmallVector<llvm::StringRef, 2>;

/// A value's layout: the axes splitting each dimension, and the axes over
/// which it is a partial sum.
struct Layout {
  bool operator==(const Layout &o) const {
    return dims == o.dims && partial == o.partial;
  }

  llvm::SmallVector<Axes> dims;
  Axes partial;

  static Layout replicated(int64_t rank) {
    Layout l;
    l.dims.resize(rank);
    return l;
  }
  static Layout of(ShardingAttr s) {
    Layout l;
    for (unsigned d = 0, e = s.getDims().size(); d < e; ++d)
      l.dims.push_back(Axes(s.getDimAxes(d)));
    l.partial = Axes(s.getPartialAxes());
    return l;
  }
  bool isReplicated() const {
    return partial.empty() &&
           llvm::all_of(dims, [](const Axes &a) { return a.empty(); });
  }
  ShardingAttr toAttr(mlir::FlatSymbolRefAttr mesh) const {
    mlir::MLIRContext *ctx = mesh.getContext();
    auto list = [&](llvm::ArrayRef<llvm::StringRef> axes) {
      llvm::SmallVector<mlir::Attribute> names;
      for (llvm::StringRef a : axes)
        names.push_back(mlir::StringAttr::get(ctx, a));
      return mlir::ArrayAttr::get(ctx, names);
    };
    llvm::SmallVector<mlir::Attribute> ds;
    for (const Axes &a : dims)
      ds.push_back(list(a));
    return ShardingAttr::get(ctx, mesh, mlir::ArrayAttr::get(ctx, ds),
                             partial.empty() ? mlir::ArrayAttr()
                                             : list(partial));
  }
};

} // namespace llmc::dist

#endif // LLMC_LIB_DIALECT_DIST_TRANSFORMS_LAYOUT_H
