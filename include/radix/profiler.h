#pragma once
/// Chrome / Perfetto trace-event recording of compiles and calls (open in ui.perfetto.dev), and
/// the per-op profile of compiled code (docs/profiling.md).
/// Tracing: RADIX_TRACE=<file.json> at start-up, or radix::startTrace.
/// Profiling: RADIX_PROFILE=1 (the table is printed to stderr at exit), or CompileOptions::profile.
#include <cstdint>
#include <string>
#include <vector>

namespace radix {

/// Starts recording trace events to `path` (replacing a recording in progress).
/// radix::startTrace("/tmp/run.json"); ... radix::stopTrace();
void startTrace(const std::string& path);
/// Writes the recorded events as a JSON object {"traceEvents": [...]} and stops recording.
void stopTrace();
/// True while events are being recorded.
bool tracing();

/// One line of the profile: the calls of one op at one place in the user's source, summed over
/// every profiled executable and call since the start (or the last profileReset).
struct ProfileRow {
  /// Traced op names fused into the region, joined by '+': "dot", "mul+add+exp".
  std::string op;
  /// "kernel" (a GEMM/GEMV/convolution/attention library call), "loops" (a loop nest of compiled
  /// code) or "copy".
  std::string kind;
  /// The user's source line(s) that produced it: "model.cpp:42" or "model.cpp:42,43".
  std::string location;
  int64_t calls = 0;
  double seconds = 0;
  /// Totals over all calls; 0 where not known (flops for kernels, bytes for loops and copies).
  double flops = 0, bytes = 0;
};

/// The profile rows of code compiled with profiling on, slowest first.
/// for (const radix::ProfileRow& r : radix::profileRows()) std::cout << r.op << " " << r.seconds;
std::vector<ProfileRow> profileRows();
/// The rows as a table (op, kind, location, calls, total ms, share, GFLOP/s or GB/s), with a
/// header line giving the time spent in profiled executables; "" when nothing was profiled.
/// std::cerr << radix::profileReport();
std::string profileReport();
/// Clears every counter (the next report counts from here).
void profileReset();

}  // namespace radix
