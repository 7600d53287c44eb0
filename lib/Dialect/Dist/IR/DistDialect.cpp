//===- DistDialect.cpp - dist dialect registration and attributes ---------===//
#include "Dialect/Dist/IR/Dist.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace llmc::dist;

#include "Dialect/Dist/IR/DistEnums.cpp.inc"
#include "Dialect/Dist/IR/DistOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Dialect/Dist/IR/DistAttrs.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Dialect/Dist/IR/DistOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Dialect/Dist/IR/DistAttrs.cpp.inc"
      >();
}

// #dist.link<bandwidth = B, latency = L>, both plain numbers (f64).
Attribute LinkAttr::parse(AsmParser &parser, Type) {
  double bandwidth = 0, latency = 0;
  if (parser.parseLess() || parser.parseKeyword("bandwidth") ||
      parser.parseEqual() || parser.parseFloat(bandwidth) ||
      parser.parseComma() || parser.parseKeyword("latency") ||
      parser.parseEqual() || parser.parseFloat(latency) ||
      parser.parseGreater())
    return {};
  Builder b(parser.getContext());
  return parser.getChecked<LinkAttr>(parser.getContext(),
                                     b.getF64FloatAttr(bandwidth),
                                     b.getF64FloatAttr(latency));
}

void LinkAttr::print(AsmPrinter &printer) const {
  printer << "<bandwidth = ";
  printer.printFloat(getBandwidth().getValue());
  printer << ", latency = ";
  printer.printFloat(getLatency().getValue());
  printer << ">";
}

LogicalResult LinkAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               FloatAttr bandwidthAttr, FloatAttr latencyAttr) {
  double bandwidth = bandwidthAttr.getValueAsDouble();
  double latency = latencyAttr.getValueAsDouble();
  if (!std::isfinite(bandwidth) || bandwidth <= 0)
    return emitError() << "a link's bandwidth must be a positive number of "
                          "bytes per second";
  if (!std::isfinite(latency) || latency < 0)
    return emitError() << "a link's latency must be a non-negative number of "
                          "seconds";
  return success();
}

/// The axis names of an array of string attributes, or failure.
static FailureOr<SmallVector<StringRef>>
axisNames(function_ref<InFlightDiagnostic()> emitError, ArrayAttr list,
          StringRef what) {
  SmallVector<StringRef> names;
  for (Attribute a : list) {
    auto s = dyn_cast<StringAttr>(a);
    if (!s || s.getValue().empty()) {
      emitError() << what << " must be lists of mesh axis names, got " << a;
      return failure();
    }
    names.push_back(s.getValue());
  }
  return names;
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FlatSymbolRefAttr mesh, ArrayAttr dims,
                                   ArrayAttr partial) {
  // Every list of axes (a dimension's, then the partial ones), each axis
  // named once in all.
  SmallVector<std::pair<ArrayAttr, StringRef>> lists;
  for (Attribute d : dims) {
    auto list = dyn_cast<ArrayAttr>(d);
    if (!list)
      return emitError() << "a sharding's dims must be lists of mesh axis "
                            "names, got "
                         << d;
    lists.push_back({list, "a sharding's dims"});
  }
  if (partial)
    lists.push_back({partial, "a sharding's partial axes"});
  llvm::StringSet<> seen;
  for (auto [list, what] : lists) {
    auto names = axisNames(emitError, list, what);
    if (failed(names))
      return failure();
    for (StringRef axis : *names)
      if (!seen.insert(axis).second)
        return emitError() << "sharding names mesh axis '" << axis
                           << "' more than once";
  }
  return success();
}

static SmallVector<StringRef> names(ArrayAttr list) {
  SmallVector<StringRef> out;
  if (list)
    for (Attribute a : list)
      out.push_back(cast<StringAttr>(a).getValue());
  return out;
}

SmallVector<StringRef> ShardingAttr::getDimAxes(unsigned dim) const {
  return names(cast<ArrayAttr>(getDims()[dim]));
}

SmallVector<StringRef> ShardingAttr::getPartialAxes() const {
  return names(getPartial());
}

bool ShardingAttr::isReplicated() const {
  return getPartialAxes().empty() && llvm::all_of(getDims(), [](Attribute d) {
           return cast<ArrayAttr>(d).empty();
         });
}
