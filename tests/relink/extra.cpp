// Unrelated code, linked before main.cpp in the second build of tests/relink.
#include <string>
#include <vector>

std::string unrelatedWork(int n) {
  std::vector<std::string> parts;
  for (int i = 0; i < n; ++i) parts.push_back(std::to_string(i * i));
  std::string out;
  for (const std::string& p : parts) out += p + ",";
  return out;
}
