#include "system_files.hpp"

#include <algorithm>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

namespace rnngraph::system_files {

std::string read_text(const std::string& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char chunk[4096];
  for (;;) {
    const ssize_t got = ::read(fd, chunk, sizeof(chunk));
    if (got <= 0 || text.size() > (std::size_t(1) << 20)) break;
    text.append(chunk, static_cast<std::size_t>(got));
  }
  ::close(fd);
  return text;
}

double number_at(const std::string& text, std::size_t from) {
  if (from >= text.size()) return 0;
  const char* start = text.c_str() + from;
  char* end = nullptr;
  const double value = std::strtod(start, &end);
  return end == start ? 0 : value;
}

double field(const std::string& text, const std::string& key) {
  for (std::size_t at = 0; at < text.size();) {
    if (text.compare(at, key.size(), key) == 0) return number_at(text, at + key.size());
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return -1;
}

std::vector<CgroupLine> cgroup_lines(const std::string& cgroup_file) {
  std::vector<CgroupLine> lines;
  for (std::size_t at = 0; at < cgroup_file.size();) {
    std::size_t end = cgroup_file.find('\n', at);
    if (end == std::string::npos) end = cgroup_file.size();
    const std::string line = cgroup_file.substr(at, end - at);
    at = end + 1;
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    lines.push_back({line.substr(first + 1, second - first - 1), line.substr(second + 1)});
  }
  return lines;
}

bool names_controller(const std::string& controllers, const std::string& controller) {
  for (std::size_t at = 0; at <= controllers.size();) {
    const std::size_t comma = std::min(controllers.find(',', at), controllers.size());
    if (controllers.compare(at, comma - at, controller) == 0) return true;
    at = comma + 1;
  }
  return false;
}

}  // namespace rnngraph::system_files
