#include "probe/subject_table.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace phasor::probe {

absl::StatusOr<SubjectTable> ParseSubjectTable(absl::string_view text, const std::string& name) {
  SubjectTable table;
  std::istringstream lines{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string subject, kind, id, extra;
    if (!(fields >> subject)) continue;
    const std::string where = absl::StrCat(name, ":", number, ": ");
    if (!(fields >> kind >> id) || (fields >> extra)) {
      return absl::InvalidArgumentError(where + "expected '<measured subject> job|link <id>'");
    }
    if (kind != "job" && kind != "link") {
      return absl::InvalidArgumentError(where + "'" + kind + "' is not job or link");
    }
    table[subject] = {kind == "link", id};
  }
  return table;
}

absl::StatusOr<SubjectTable> LoadSubjectTable(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseSubjectTable(text.str(), path);
}

}  // namespace phasor::probe
