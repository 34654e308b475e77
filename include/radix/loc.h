#pragma once
/// radix::Loc: the source location every op takes as its defaulted last parameter. Capturing it
/// also records it as this thread's "current op location", so that an error thrown while tracing,
/// even before the op emits anything, names the user's file and line. Locations inside Radix's
/// own headers (ops that nn layers and model structs call) are never recorded: errors and the
/// traced IR name the user's line that called into Radix instead.
#include <source_location>
#include <string_view>

namespace radix {

namespace detail {
/// Records `where` as the location of the op being called on this thread (see radix::Loc).
void noteOpLocation(const std::source_location& where) noexcept;

/// True when `file` is one of Radix's public headers (include/radix/...), as this translation
/// unit spells their paths, or a source of the library itself (src/, beside include/).
inline bool isRadixHeader(const char* file) noexcept {
  constexpr std::string_view self = std::source_location::current().file_name();  // .../include/radix/loc.h
  constexpr std::string_view dir = self.substr(0, self.rfind('/') + 1);
  constexpr std::string_view include = "include/radix/";
  constexpr std::string_view root =
      dir.ends_with(include) ? dir.substr(0, dir.size() - include.size()) : std::string_view();
  const std::string_view f = file;
  if (!dir.empty() && f.starts_with(dir)) return true;
  if (!root.empty() && f.starts_with(root) && f.substr(root.size()).starts_with("src/")) return true;
  return f.find(include) != std::string_view::npos;
}
}  // namespace detail

/// A std::source_location whose current() also notes the location for error messages.
/// Tensor add(const Tensor& other, Loc loc = Loc::current()) const;  // loc: the caller's line
class Loc : public std::source_location {
 public:
  Loc(const std::source_location& where) noexcept  // NOLINT: implicit
      : std::source_location(where), internal_(where.line() == 0 || detail::isRadixHeader(where.file_name())) {}
  /// The caller's location (as a default argument: the call site of the op), noted for errors
  /// unless it lies in a Radix header.
  static Loc current(std::source_location where = std::source_location::current()) noexcept {
    Loc loc(where);
    if (!loc.internal_) detail::noteOpLocation(where);
    return loc;
  }
  /// No location (line 0): keeps the one noted, e.g. when radix::call supplies a layer's Loc.
  static Loc none() noexcept { return Loc(std::source_location()); }
  /// True inside Radix's headers or without a line: the user's noted location stands for it.
  bool internal() const noexcept { return internal_; }

 private:
  bool internal_ = false;
};

}  // namespace radix
