#include "probe/switch_csv.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace phasor::probe {
namespace {

struct PortState {
  bool have_prev = false;
  int64_t prev_us = 0;
  CounterSeries in, out;
};

absl::string_view Field(absl::string_view f) {
  f = absl::StripAsciiWhitespace(f);
  if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
  return f;
}

}  // namespace

absl::StatusOr<SwitchCsvResult> ParseSwitchCsv(absl::string_view text, const std::string& name,
                                               const SwitchCsvOptions& options) {
  if (!(options.max_gbps > 0)) return absl::InvalidArgumentError("max_gbps: must be positive");
  SwitchCsvResult result;
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  size_t line_no = 0;
  // Header.
  while (line_no < lines.size() && absl::StripAsciiWhitespace(lines[line_no]).empty()) ++line_no;
  if (line_no == lines.size()) {
    return absl::InvalidArgumentError(absl::StrCat("switch CSV '", name, "': empty (no header)"));
  }
  std::vector<absl::string_view> header = absl::StrSplit(lines[line_no], ',');
  std::map<std::string, size_t, std::less<>> col;
  for (size_t i = 0; i < header.size(); ++i) {
    absl::string_view h = Field(header[i]);
    if (i == 0) absl::ConsumePrefix(&h, "\xEF\xBB\xBF");  // UTF-8 byte order mark
    col.emplace(std::string(h), i);
  }
  static constexpr const char* kRequired[] = {"SaveTimeUTC", "DeviceName", "PortName", "InOctets",
                                              "OutOctets"};
  size_t idx[5];
  for (int i = 0; i < 5; ++i) {
    auto it = col.find(kRequired[i]);
    if (it == col.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("switch CSV '", name, "': header has no column '", kRequired[i], "'"));
    }
    idx[i] = it->second;
  }
  size_t max_idx = 0;
  for (size_t i : idx) max_idx = std::max(max_idx, i);

  std::map<std::pair<std::string, std::string>, PortState> ports;
  std::vector<std::pair<std::string, std::string>> order;
  auto bad = [&](size_t line, const std::string& what) {
    ++result.bad_rows;
    if (result.first_error.empty())
      result.first_error = absl::StrCat("line ", line + 1, ": ", what);
  };
  for (++line_no; line_no < lines.size(); ++line_no) {
    absl::string_view line = lines[line_no];
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    ++result.rows;
    std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    if (f.size() <= max_idx) {
      bad(line_no, absl::StrCat("has ", f.size(), " fields, needs ", max_idx + 1));
      continue;
    }
    int64_t ms = 0;
    uint64_t in_octets = 0, out_octets = 0;
    if (!absl::SimpleAtoi(Field(f[idx[0]]), &ms) || ms <= 0) {
      bad(line_no, absl::StrCat("SaveTimeUTC: '", Field(f[idx[0]]), "' is not a time in ms"));
      continue;
    }
    if (!absl::SimpleAtoi(Field(f[idx[3]]), &in_octets)) {
      bad(line_no, absl::StrCat("InOctets: '", Field(f[idx[3]]), "' is not a count"));
      continue;
    }
    if (!absl::SimpleAtoi(Field(f[idx[4]]), &out_octets)) {
      bad(line_no, absl::StrCat("OutOctets: '", Field(f[idx[4]]), "' is not a count"));
      continue;
    }
    const absl::string_view device = Field(f[idx[1]]);
    const absl::string_view port = Field(f[idx[2]]);
    if (device.empty() || port.empty()) {
      bad(line_no, device.empty() ? "DeviceName: empty" : "PortName: empty");
      continue;
    }
    if (ms > (int64_t{1} << 50)) {
      bad(line_no, absl::StrCat("SaveTimeUTC: ", ms, " is out of range"));
      continue;
    }
    auto key = std::make_pair(std::string(device), std::string(port));
    auto [it, inserted] = ports.try_emplace(key);
    PortState& st = it->second;
    if (inserted) {
      order.push_back(key);
      const std::string base = absl::StrCat(device, "/", port);
      st.in.subject = base + "/in";
      st.out.subject = base + "/out";
      st.in.source = st.out.source = "switch-csv:" + name;
    }
    const int64_t now_us = ms * 1000;
    if (!st.have_prev) {
      st.have_prev = true;
      st.prev_us = now_us;
      ++result.first_rows;
      continue;
    }
    if (now_us <= st.prev_us) {
      ++result.unordered_rows;
      continue;
    }
    const double seconds = (now_us - st.prev_us) / 1e6;
    const double max_bytes = options.max_gbps * 1e9 / 8 * seconds;
    if (static_cast<double>(in_octets) > max_bytes || static_cast<double>(out_octets) > max_bytes) {
      ++result.cumulative_rows;
      st.prev_us = now_us;
      continue;
    }
    st.in.intervals.push_back({st.prev_us, now_us, static_cast<double>(in_octets)});
    st.out.intervals.push_back({st.prev_us, now_us, static_cast<double>(out_octets)});
    st.prev_us = now_us;
  }
  for (const auto& key : order) {
    PortState& st = ports[key];
    if (st.in.intervals.empty()) continue;
    if (options.in) result.series.push_back(std::move(st.in));
    if (options.out) result.series.push_back(std::move(st.out));
  }
  if (result.series.empty() && (options.in || options.out)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "switch CSV '", name, "': no usable rows (", result.rows, " rows, ", result.bad_rows,
        " bad", result.first_error.empty() ? "" : ", first: " + result.first_error, ")"));
  }
  return result;
}

absl::StatusOr<SwitchCsvResult> ReadSwitchCsv(const std::string& path,
                                              const SwitchCsvOptions& options) {
  gzFile file = gzopen(path.c_str(), "rb");  // reads plain files unchanged
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("switch CSV '", path, "': ", std::strerror(errno)));
  }
  std::string text;
  char buf[1 << 16];
  while (true) {
    const int n = gzread(file, buf, sizeof(buf));
    if (n < 0) {
      int errnum = 0;
      const std::string msg = gzerror(file, &errnum);
      gzclose(file);
      return absl::InvalidArgumentError(
          absl::StrCat("switch CSV '", path, "': corrupt gzip data (", msg, ")"));
    }
    if (n == 0) {
      int errnum = Z_OK;
      const std::string msg = gzerror(file, &errnum);
      if (errnum != Z_OK && errnum != Z_STREAM_END) {
        gzclose(file);
        return absl::InvalidArgumentError(
            absl::StrCat("switch CSV '", path, "': corrupt gzip data (", msg, ")"));
      }
      break;
    }
    text.append(buf, n);
    if (text.size() > (size_t{1} << 31)) {
      gzclose(file);
      return absl::InvalidArgumentError(absl::StrCat("switch CSV '", path, "': larger than 2 GiB"));
    }
  }
  gzclose(file);
  return ParseSwitchCsv(text, path, options);
}

absl::StatusOr<CounterCollection> SwitchCsvSource::Collect() {
  CounterCollection out;
  if (paths_.empty()) return absl::InvalidArgumentError("switch CSV: no file given");
  for (const std::string& path : paths_) {
    absl::StatusOr<SwitchCsvResult> r = ReadSwitchCsv(path, options_);
    if (!r.ok()) return r.status();
    if (r->bad_rows > 0) {
      out.notes.push_back(absl::StrCat(path, ": skipped ", r->bad_rows,
                                       " bad rows (first: ", r->first_error, ")"));
    }
    for (CounterSeries& s : r->series) out.series.push_back(std::move(s));
  }
  return out;
}

}  // namespace phasor::probe
