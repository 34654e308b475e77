#pragma once
/// Chrome / Perfetto trace-event recording of compiles and calls (open in ui.perfetto.dev).
/// Enabled by RADIX_TRACE=<file.json> at start-up, or by radix::startTrace.
#include <string>

namespace radix {

/// Starts recording trace events to `path` (replacing a recording in progress).
/// radix::startTrace("/tmp/run.json"); ... radix::stopTrace();
void startTrace(const std::string& path);
/// Writes the recorded events as a JSON object {"traceEvents": [...]} and stops recording.
void stopTrace();
/// True while events are being recorded.
bool tracing();

}  // namespace radix
