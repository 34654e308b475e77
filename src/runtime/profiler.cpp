#include "runtime/profiler.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
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

int64_t traceTid() {
  return static_cast<int64_t>(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000);
}

void record(nlohmann::json e) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.on) r.events.push_back(std::move(e));
}

nlohmann::json completeEvent(const std::string& name, const char* category, std::chrono::steady_clock::time_point start,
                             std::chrono::steady_clock::time_point end) {
  const auto origin = recorder().origin;
  return {
      {"name", name},
      {"cat", category},
      {"ph", "X"},
      {"ts", std::chrono::duration<double, std::micro>(start - origin).count()},
      {"dur", std::chrono::duration<double, std::micro>(end - start).count()},
      {"pid", static_cast<int64_t>(getpid())},
      {"tid", traceTid()},
  };
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
  nlohmann::json e = completeEvent(name_, category_, start_, std::chrono::steady_clock::now());
  nlohmann::json args = nlohmann::json::object();
  for (auto& [k, v] : args_) args[k] = v;
  e["args"] = args;
  record(std::move(e));
}

}  // namespace detail
}  // namespace radix

// ---- per-op profile ----

namespace radix {
namespace {

struct ProfileRegistry {
  std::mutex mutex;
  std::vector<std::shared_ptr<detail::ProfileTable>> tables;
  ~ProfileRegistry() {
    if (!detail::profileEnvOn()) return;
    const std::string report = profileReport();
    if (!report.empty()) std::fprintf(stderr, "%s", report.c_str());
  }
};

ProfileRegistry& registry() {
  static ProfileRegistry r;
  return r;
}

thread_local detail::ProfileTable* currentTable = nullptr;
thread_local std::chrono::steady_clock::time_point siteStart;

uint64_t nanosSince(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
}

std::string fixed(double v, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

std::string pad(std::string s, size_t width, bool right) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

}  // namespace

namespace detail {

bool profileEnvOn() {
  const char* env = std::getenv("RADIX_PROFILE");
  return env && *env && std::string_view(env) != "0";
}

std::shared_ptr<ProfileTable> makeProfileTable(std::vector<ProfileSite> sites) {
  auto table = std::make_shared<ProfileTable>();
  const size_t n = sites.size();
  table->sites = std::move(sites);
  table->calls = std::make_unique<std::atomic<uint64_t>[]>(n);
  table->nanos = std::make_unique<std::atomic<uint64_t>[]>(n);
  for (size_t i = 0; i < n; ++i) table->calls[i] = 0, table->nanos[i] = 0;
  ProfileRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.tables.push_back(table);
  return table;
}

std::string profileSitesText(const std::vector<ProfileSite>& sites) {
  nlohmann::json out = nlohmann::json::array();
  for (const ProfileSite& s : sites) out.push_back({s.op, s.kind, s.location, s.flops, s.bytes});
  return out.dump();
}

std::optional<std::vector<ProfileSite>> parseProfileSites(std::string_view text) {
  nlohmann::json in = nlohmann::json::parse(text, nullptr, false);
  if (in.is_discarded() || !in.is_array()) return std::nullopt;
  std::vector<ProfileSite> sites;
  for (const nlohmann::json& row : in) {
    if (!row.is_array() || row.size() != 5 || !row[0].is_string() || !row[1].is_string() || !row[2].is_string() ||
        !row[3].is_number() || !row[4].is_number())
      return std::nullopt;
    ProfileSite s{row[0].get<std::string>(), row[1].get<std::string>(), row[2].get<std::string>(),
                  row[3].get<double>(), row[4].get<double>()};
    if (!std::isfinite(s.flops) || !std::isfinite(s.bytes) || s.flops < 0 || s.bytes < 0) return std::nullopt;
    sites.push_back(std::move(s));
  }
  return sites;
}

ProfileScope::ProfileScope(ProfileTable* table) : table_(table), previous_(currentTable) {
  if (!table_) return;
  currentTable = table_;
  start_ = std::chrono::steady_clock::now();
}

ProfileScope::~ProfileScope() {
  if (!table_) return;
  table_->entryNanos.fetch_add(nanosSince(start_, std::chrono::steady_clock::now()), std::memory_order_relaxed);
  table_->entryCalls.fetch_add(1, std::memory_order_relaxed);
  currentTable = previous_;
}

}  // namespace detail

std::vector<ProfileRow> profileRows() {
  std::map<std::tuple<std::string, std::string, std::string>, ProfileRow> rows;
  ProfileRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& table : r.tables)
    for (size_t i = 0; i < table->sites.size(); ++i) {
      const uint64_t calls = table->calls[i].load(std::memory_order_relaxed);
      if (calls == 0) continue;
      const detail::ProfileSite& s = table->sites[i];
      ProfileRow& row = rows[{s.op, s.kind, s.location}];
      row.op = s.op, row.kind = s.kind, row.location = s.location;
      row.calls += static_cast<int64_t>(calls);
      row.seconds += static_cast<double>(table->nanos[i].load(std::memory_order_relaxed)) * 1e-9;
      row.flops += s.flops * static_cast<double>(calls);
      row.bytes += s.bytes * static_cast<double>(calls);
    }
  std::vector<ProfileRow> out;
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const ProfileRow& a, const ProfileRow& b) { return a.seconds > b.seconds; });
  return out;
}

std::string profileReport() {
  const std::vector<ProfileRow> rows = profileRows();
  if (rows.empty()) return "";
  double entrySeconds = 0, opSeconds = 0;
  uint64_t entryCalls = 0;
  {
    ProfileRegistry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto& table : r.tables) {
      entrySeconds += static_cast<double>(table->entryNanos.load(std::memory_order_relaxed)) * 1e-9;
      entryCalls += table->entryCalls.load(std::memory_order_relaxed);
    }
  }
  for (const ProfileRow& row : rows) opSeconds += row.seconds;
  const std::vector<std::string> head = {"op", "kind", "location", "calls", "total ms", "share", "rate"};
  std::vector<std::vector<std::string>> cells;
  for (const ProfileRow& row : rows) {
    std::string rate = "-";
    if (row.seconds > 0 && row.flops > 0) rate = fixed(row.flops / row.seconds * 1e-9, 2) + " GFLOP/s";
    else if (row.seconds > 0 && row.bytes > 0) rate = fixed(row.bytes / row.seconds * 1e-9, 2) + " GB/s";
    std::string op = row.op.size() > 48 ? row.op.substr(0, 45) + "..." : row.op;
    cells.push_back({op, row.kind, row.location, std::to_string(row.calls), fixed(row.seconds * 1e3, 3),
                     fixed(opSeconds > 0 ? 100 * row.seconds / opSeconds : 0, 1) + "%", rate});
  }
  std::vector<size_t> width(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    width[c] = head[c].size();
    for (const auto& line : cells) width[c] = std::max(width[c], line[c].size());
  }
  const bool right[] = {false, false, false, true, true, true, true};
  auto line = [&](const std::vector<std::string>& v) {
    std::string s;
    for (size_t c = 0; c < v.size(); ++c) s += (c ? "  " : "") + pad(v[c], width[c], right[c]);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = "radix profile: " + fixed(entrySeconds * 1e3, 3) + " ms in " + std::to_string(entryCalls) +
                    " profiled executable calls; the ops below cover " +
                    fixed(entrySeconds > 0 ? 100 * opSeconds / entrySeconds : 0, 1) + "%\n";
  out += line(head);
  for (const auto& v : cells) out += line(v);
  return out;
}

void profileReset() {
  ProfileRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::shared_ptr<detail::ProfileTable>> kept;
  for (auto& table : r.tables) {
    for (size_t i = 0; i < table->sites.size(); ++i) table->calls[i] = 0, table->nanos[i] = 0;
    table->entryCalls = 0, table->entryNanos = 0;
    if (table.use_count() > 1) kept.push_back(std::move(table));  // still held by an executable
  }
  r.tables = std::move(kept);
}

}  // namespace radix

extern "C" __attribute__((visibility("default"))) void radix_profile_begin(int64_t) {
  radix::siteStart = std::chrono::steady_clock::now();
}

extern "C" __attribute__((visibility("default"))) void radix_profile_end(int64_t id) {
  const auto end = std::chrono::steady_clock::now();
  radix::detail::ProfileTable* table = radix::currentTable;
  if (!table || id < 0 || static_cast<size_t>(id) >= table->sites.size()) return;
  table->calls[id].fetch_add(1, std::memory_order_relaxed);
  table->nanos[id].fetch_add(radix::nanosSince(radix::siteStart, end), std::memory_order_relaxed);
  if (radix::recorder().on) {
    const radix::detail::ProfileSite& s = table->sites[static_cast<size_t>(id)];
    nlohmann::json e = radix::completeEvent(s.op, "op", radix::siteStart, end);
    e["args"] = {{"location", s.location}, {"kind", s.kind}};
    radix::record(std::move(e));
  }
}
