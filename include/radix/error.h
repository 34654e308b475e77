#pragma once
/// Radix errors: every failure caused by user input throws radix::Error, whose message
/// starts with the name of the op or phase in brackets, e.g. `[dot] no axis tagged "k"`.
#include <stdexcept>
#include <string>

namespace radix {

/// The one exception type Radix throws for bad input, invalid files and failed compiles.
/// what() -> "[add] shapes differ: {2,3}:f32 vs {3}:f32"
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace radix
