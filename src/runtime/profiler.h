#pragma once
// Scoped trace events ("X" complete events) for the Perfetto trace.
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace radix::detail {

/// Records one complete event from construction to destruction when tracing is on.
class TraceEvent {
 public:
  explicit TraceEvent(const char* name, const char* category = "radix");
  ~TraceEvent();
  TraceEvent(const TraceEvent&) = delete;
  TraceEvent& operator=(const TraceEvent&) = delete;
  /// Adds an argument shown in the event's details.
  void arg(const std::string& key, const std::string& value);
  void arg(const std::string& key, int64_t value);
  /// Seconds since construction.
  double seconds() const;

 private:
  const char* name_;
  const char* category_;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::pair<std::string, std::string>> args_;
  bool on_;
};

}  // namespace radix::detail
