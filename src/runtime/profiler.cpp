#include "runtime/profiler.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "radix/error.h"
#include "radix/profiler.h"

namespace radix {
namespace {

struct Recorder {
  std::mutex mutex;
  std::string path;
  nlohmann::json events = nlohmann::json::array();
  bool on = false;
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();

  Recorder() {
    if (const char* env = std::getenv("RADIX_TRACE"); env && *env) {
      path = env;
      on = true;
    }
  }
  ~Recorder() { flush(); }

  void flush() {
    std::lock_guard<std::mutex> lock(mutex);
    if (!on) return;
    on = false;
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    {
      std::ofstream out(tmp);
      nlohmann::json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
      out << doc.dump(1) << "\n";
      if (!out) {
        std::fprintf(stderr, "radix: warning: could not write trace %s\n", path.c_str());
        return;
      }
    }
    std::rename(tmp.c_str(), path.c_str());
    events = nlohmann::json::array();
  }
};

Recorder& recorder() {
  static Recorder r;
  return r;
}

}  // namespace

void startTrace(const std::string& path) {
  Recorder& r = recorder();
  r.flush();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.path = path;
  r.on = true;
}

void stopTrace() { recorder().flush(); }

bool tracing() { return recorder().on; }

namespace detail {

TraceEvent::TraceEvent(const char* name, const char* category)
    : name_(name), category_(category), start_(std::chrono::steady_clock::now()), on_(recorder().on) {}

void TraceEvent::arg(const std::string& key, const std::string& value) {
  if (on_) args_.emplace_back(key, value);
}
void TraceEvent::arg(const std::string& key, int64_t value) {
  if (on_) args_.emplace_back(key, std::to_string(value));
}

double TraceEvent::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

TraceEvent::~TraceEvent() {
  if (!on_) return;
  Recorder& r = recorder();
  auto end = std::chrono::steady_clock::now();
  nlohmann::json e = {
      {"name", name_},
      {"cat", category_},
      {"ph", "X"},
      {"ts", std::chrono::duration<double, std::micro>(start_ - r.origin).count()},
      {"dur", std::chrono::duration<double, std::micro>(end - start_).count()},
      {"pid", static_cast<int64_t>(getpid())},
      {"tid", static_cast<int64_t>(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000)},
  };
  nlohmann::json args = nlohmann::json::object();
  for (auto& [k, v] : args_) args[k] = v;
  e["args"] = args;
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.on) r.events.push_back(std::move(e));
}

}  // namespace detail
}  // namespace radix
