#pragma once
/// radix::Loc: the source location every op takes as its defaulted last parameter. Capturing it
/// also records it as this thread's "current op location", so that an error thrown while tracing,
/// even before the op emits anything, names the user's file and line.
#include <source_location>

namespace radix {

namespace detail {
/// Records `where` as the location of the op being called on this thread (see radix::Loc).
void noteOpLocation(const std::source_location& where) noexcept;
}  // namespace detail

/// A std::source_location whose current() also notes the location for error messages.
/// Tensor add(const Tensor& other, Loc loc = Loc::current()) const;  // loc: the caller's line
class Loc : public std::source_location {
 public:
  Loc(const std::source_location& where) noexcept : std::source_location(where) {}  // NOLINT: implicit
  /// The caller's location (as a default argument: the call site of the op), noted for errors.
  static Loc current(std::source_location where = std::source_location::current()) noexcept {
    detail::noteOpLocation(where);
    return Loc(where);
  }
};

}  // namespace radix
