// The op table's registry: the sections that the ops_*_test.cpp files register, expanded into
// cases (allCases). Apart from ops_testing.cpp's tests, so that radix-gpu-prepare (tests/gpu/)
// carries the same cases to a GPU.
#include "ops_testing.h"

namespace opstest {

namespace {
std::vector<std::pair<std::string, std::vector<Case> (*)()>>& sections() {
  static std::vector<std::pair<std::string, std::vector<Case> (*)()>> s;
  return s;
}
std::vector<std::vector<ErrorCase> (*)()>& errorLists() {
  static std::vector<std::vector<ErrorCase> (*)()> s;
  return s;
}
}  // namespace

bool registerCases(const char* section, std::vector<Case> (*rows)()) {
  sections().emplace_back(section, rows);
  return true;
}

bool registerErrors(std::vector<ErrorCase> (*rows)()) {
  errorLists().push_back(rows);
  return true;
}

std::vector<ErrorCase> allErrorCases() {
  std::vector<ErrorCase> out;
  for (auto rows : errorLists())
    for (ErrorCase& c : rows()) out.push_back(std::move(c));
  return out;
}

/// Every case, one per dtype of its row; cases of one section and dtype form a group.
std::vector<Case> allCases() {
  std::vector<Case> out;
  for (const auto& [sectionName, rows] : sections())
    for (const Case& c : rows()) {
      if (c.dtypes.empty()) {
        out.push_back(c);
        out.back().group = sectionName;
      }
      for (DType d : c.dtypes) {
        Case e = c;
        e.name += "_" + std::string(radix::name(d));
        e.group = sectionName + "_" + std::string(radix::name(d));
        for (Shape& s : e.inputs) s = s.withDtype(d);
        e.out = c.out.withDtype(d);
        out.push_back(e);
      }
    }
  return out;
}

}  // namespace opstest
