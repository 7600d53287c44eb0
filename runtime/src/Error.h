//===- Error.h - Error type of the runtime internals ------------*- C++ -*-===//
//
// Inside the runtime, failures are C++ exceptions carrying a complete,
// user-facing message; the C API layer turns them into error strings so that
// none crosses the C boundary.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_SRC_ERROR_H
#define LLMC_RUNTIME_SRC_ERROR_H

#include <stdexcept>
#include <string>
#include <system_error>

namespace llmc::rt {

/// A runtime failure whose what() is the message shown to the user. By
/// convention it starts with the file or argument it is about.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Returns the description of an errno value, as strerror() but thread-safe.
inline std::string errnoMessage(int errnum) {
  return std::error_code(errnum, std::generic_category()).message();
}

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_ERROR_H
