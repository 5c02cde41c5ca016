// A bad argument, raised by the core's validation and turned into the Python
// exception of the same kind (TypeError, ValueError, IndexError) by the
// bindings. Messages name the argument, what was expected and "(got X)".
#pragma once
#include <stdexcept>
#include <string>

namespace jitops {

class ArgError : public std::runtime_error {
 public:
  enum Kind { Type, Value, Index };
  ArgError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

inline ArgError type_error(const std::string& m) { return ArgError(ArgError::Type, m); }
inline ArgError value_error(const std::string& m) { return ArgError(ArgError::Value, m); }
inline ArgError index_error(const std::string& m) { return ArgError(ArgError::Index, m); }

}  // namespace jitops
