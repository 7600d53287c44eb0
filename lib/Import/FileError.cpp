//===- FileError.cpp - errors that name the file they are about -----------===//
#include "Import/Import.h"

llvm::Error llmc::fileError(llvm::StringRef file, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (file + ": " + message).str());
}
