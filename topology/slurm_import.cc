#include "topology/slurm_import.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "topology/absl_compat.h"

namespace phasor::topology {
namespace {

// Splits at commas that are not inside brackets.
absl::StatusOr<std::vector<absl::string_view>> SplitTopLevel(absl::string_view list) {
  std::vector<absl::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '[') {
      if (++depth > 1) return absl::InvalidArgumentError("nested '['");
    } else if (list[i] == ']') {
      if (--depth < 0) return absl::InvalidArgumentError("']' without '['");
    } else if (list[i] == ',' && depth == 0) {
      items.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return absl::InvalidArgumentError("'[' without ']'");
  items.push_back(list.substr(start));
  return items;
}

// Expands one item ("node[01-03,7]x[1-2]") into `out`.
absl::Status ExpandItem(absl::string_view item, std::string prefix, std::vector<std::string>& out,
                        size_t max_names) {
  const size_t open = item.find('[');
  if (open == absl::string_view::npos) {
    if (out.size() >= max_names) {
      return absl::InvalidArgumentError(absl::StrCat("expands to more than ", max_names, " names"));
    }
    out.push_back(absl::StrCat(prefix, item));
    return absl::OkStatus();
  }
  const size_t close = item.find(']', open);
  if (close == absl::string_view::npos) return absl::InvalidArgumentError("'[' without ']'");
  const std::string head = absl::StrCat(prefix, item.substr(0, open));
  const absl::string_view ranges = item.substr(open + 1, close - open - 1);
  const absl::string_view rest = item.substr(close + 1);
  if (ranges.empty()) return absl::InvalidArgumentError("empty '[]'");
  for (absl::string_view range : absl::StrSplit(ranges, ',')) {
    std::pair<absl::string_view, absl::string_view> lo_hi =
        absl::StrSplit(range, absl::MaxSplits('-', 1));
    const absl::string_view lo_text = lo_hi.first;
    const absl::string_view hi_text =
        lo_hi.second.empty() && range.find('-') == absl::string_view::npos ? lo_hi.first
                                                                           : lo_hi.second;
    uint64_t lo = 0, hi = 0;
    auto digits = [](absl::string_view s) {
      if (s.empty() || s.size() > 9) return false;
      for (char c : s) {
        if (c < '0' || c > '9') return false;
      }
      return true;
    };
    if (!digits(lo_text) || !digits(hi_text) || !absl::SimpleAtoi(lo_text, &lo) ||
        !absl::SimpleAtoi(hi_text, &hi)) {
      return absl::InvalidArgumentError(absl::StrCat("bad range '", range, "'"));
    }
    if (hi < lo) return absl::InvalidArgumentError(absl::StrCat("reversed range '", range, "'"));
    if (hi - lo > 1000000)
      return absl::InvalidArgumentError(absl::StrCat("range too large '", range, "'"));
    const size_t width = lo_text.size();
    for (uint64_t v = lo; v <= hi; ++v) {
      std::string number = absl::StrCat(v);
      if (number.size() < width) number.insert(0, width - number.size(), '0');
      if (absl::Status s = ExpandItem(rest, absl::StrCat(head, number), out, max_names); !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

struct SwitchLine {
  std::string name;
  int line = 0;
  std::vector<std::string> nodes;
  std::vector<std::string> switches;
};

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandHostList(std::string_view list_std, size_t max_names) {
  const absl::string_view list = AsAbsl(list_std);
  absl::StatusOr<std::vector<absl::string_view>> items = SplitTopLevel(list);
  if (!items.ok()) return items.status();
  std::vector<std::string> out;
  for (absl::string_view item : *items) {
    if (item.empty()) return absl::InvalidArgumentError("empty item");
    if (absl::Status s = ExpandItem(item, "", out, max_names); !s.ok()) return s;
  }
  return out;
}

absl::StatusOr<Topology> ParseSlurmTopology(std::string_view text_std,
                                            const SlurmImportOptions& options,
                                            std::string_view source_name_std) {
  const absl::string_view text = AsAbsl(text_std);
  const absl::string_view source_name = AsAbsl(source_name_std);
  if (!std::isfinite(options.node_link_gbps) || options.node_link_gbps <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("node_link_gbps: must be > 0 (got ", options.node_link_gbps, ")"));
  }
  if (!std::isfinite(options.switch_link_gbps) || options.switch_link_gbps <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("switch_link_gbps: must be > 0 (got ", options.switch_link_gbps, ")"));
  }
  for (const auto& [field, gbps] : {std::pair{"node_link_gbps", options.node_link_gbps},
                                    std::pair{"switch_link_gbps", options.switch_link_gbps}}) {
    if (gbps < kMinLinkGbps || gbps > kMaxLinkGbps) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": ", gbps, " is outside ", kMinLinkGbps, "..", kMaxLinkGbps));
    }
  }
  if (options.gpus_per_node > kMaxGpusPerServer) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus_per_node: ", options.gpus_per_node, " is outside 0..", kMaxGpusPerServer));
  }
  auto error = [&](int line, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(source_name, ":", line, ": ", what));
  };

  std::vector<SwitchLine> lines;
  absl::flat_hash_map<std::string, int> switch_line;
  int line_no = 0;
  size_t names = 0;  // expanded so far, <= kMaxNodes
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::string_view line = raw;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    SwitchLine sw;
    sw.line = line_no;
    bool has_nodes = false, has_switches = false;
    for (absl::string_view token :
         absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      const size_t eq = token.find('=');
      if (eq == absl::string_view::npos || eq == 0) {
        return error(line_no, absl::StrCat("expected Key=Value, got '", token, "'"));
      }
      const std::string key = absl::AsciiStrToLower(token.substr(0, eq));
      const absl::string_view value = token.substr(eq + 1);
      if (value.empty())
        return error(line_no, absl::StrCat("empty value for '", token.substr(0, eq), "'"));
      if (key == "switchname") {
        if (!sw.name.empty()) return error(line_no, "SwitchName given twice");
        sw.name = std::string(value);
      } else if (key == "nodes" || key == "switches") {
        bool& seen = key == "nodes" ? has_nodes : has_switches;
        if (seen) return error(line_no, absl::StrCat(token.substr(0, eq), " given twice"));
        seen = true;
        // Every line's names count against one fabric's kMaxNodes.
        absl::StatusOr<std::vector<std::string>> hosts =
            ExpandHostList(std::string_view(value.data(), value.size()), kMaxNodes - names);
        if (!hosts.ok()) {
          return error(line_no,
                       absl::StrCat("bad host list '", value, "': ", hosts.status().message()));
        }
        names += hosts->size();
        (key == "nodes" ? sw.nodes : sw.switches) = *std::move(hosts);
      } else if (key == "linkspeed") {
        // Accepted and ignored, as Slurm does; capacities come from the options.
      } else {
        return error(line_no, absl::StrCat("unknown key '", token.substr(0, eq), "'"));
      }
    }
    if (sw.name.empty()) return error(line_no, "missing SwitchName=");
    if (auto [it, inserted] = switch_line.emplace(sw.name, line_no); !inserted) {
      return error(line_no, absl::StrCat("duplicate switch '", sw.name, "' (first at line ",
                                         it->second, ")"));
    }
    lines.push_back(std::move(sw));
  }

  Topology t;
  for (const SwitchLine& sw : lines) {
    if (absl::StatusOr<NodeIndex> n = t.AddSwitch(sw.name); !n.ok()) {
      return error(sw.line, n.status().message());
    }
  }
  for (const SwitchLine& sw : lines) {
    for (const std::string& node : sw.nodes) {
      if (switch_line.contains(node)) {
        return error(sw.line, absl::StrCat("'", node, "' in Nodes= is a switch"));
      }
      if (!t.FindNode(node)) {
        absl::StatusOr<NodeIndex> n =
            t.AddServer(node, options.gpus_per_node, {NicPort{"nic0", options.node_link_gbps}});
        if (!n.ok()) return error(sw.line, n.status().message());
      }
      if (absl::Status s = t.AddDuplexLink(node, sw.name, options.node_link_gbps, "nic0");
          !s.ok()) {
        return error(sw.line, s.message());
      }
    }
    for (const std::string& child : sw.switches) {
      if (!switch_line.contains(child)) {
        return error(sw.line, absl::StrCat("switch '", child, "' in Switches= is never declared"));
      }
      if (absl::Status s = t.AddDuplexLink(child, sw.name, options.switch_link_gbps); !s.ok()) {
        return error(sw.line, s.message());
      }
    }
  }
  return t;
}

absl::StatusOr<Topology> LoadSlurmTopology(const std::string& path,
                                           const SlurmImportOptions& options) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the file"));
  std::stringstream buf;
  buf << in.rdbuf();
  return ParseSlurmTopology(buf.str(), options, path);
}

}  // namespace phasor::topology
