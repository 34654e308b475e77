#pragma once
// Scoped trace events ("X" complete events) for the Perfetto trace, and the per-op profile
// (docs/profiling.md): compiled code calls radix_profile_begin/end(id) around each op.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

/// One profiled region of an executable: a kernel call, a loop nest or a copy. `op` joins the
/// traced op names fused into it ("mul+add"), `location` is the user's "file.cpp:12".
/// `flops` (kernels) and `bytes` (loops, copies) are per call; 0 when not known.
struct ProfileSite {
  std::string op, kind, location;
  double flops = 0, bytes = 0;
};

/// The sites of one executable and their counters (calls, nanoseconds), indexed by the id that
/// compiled code passes to radix_profile_begin/end.
struct ProfileTable {
  std::vector<ProfileSite> sites;
  std::unique_ptr<std::atomic<uint64_t>[]> calls, nanos;
  std::atomic<uint64_t> entryCalls{0}, entryNanos{0};
};

/// A table for `sites`, registered so that radix::profileReport includes it.
std::shared_ptr<ProfileTable> makeProfileTable(std::vector<ProfileSite> sites);
/// The sites as the text stored in the object (JSON), and back (nullopt when malformed).
std::string profileSitesText(const std::vector<ProfileSite>& sites);
std::optional<std::vector<ProfileSite>> parseProfileSites(std::string_view text);
/// RADIX_PROFILE is set to something other than "" or "0".
bool profileEnvOn();

/// Makes `table` the one that radix_profile_begin/end count into on this thread, and times the
/// whole call; a null table does nothing.
class ProfileScope {
 public:
  explicit ProfileScope(ProfileTable* table);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  ProfileTable* table_;
  ProfileTable* previous_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace radix::detail

extern "C" {
/// Called by profiled compiled code before and after site `id` of the running executable.
void radix_profile_begin(int64_t id);
void radix_profile_end(int64_t id);
}
