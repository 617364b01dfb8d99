#include "integrations/kubernetes/k8s_names.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace phasor::kubernetes {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsUnreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::string PercentEncode(absl::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (IsUnreserved(c)) {
      out.push_back(c);
    } else {
      const auto b = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 15]);
    }
  }
  return out;
}

// Printable for a message: at most 64 characters, control bytes escaped.
std::string Quoted(absl::string_view name) {
  std::string shown;
  for (char c : name.substr(0, 64)) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) {
      absl::StrAppend(&shown, "\\x", absl::Hex(b, absl::kZeroPad2));
    } else {
      shown.push_back(c);
    }
  }
  if (name.size() > 64) shown += "...";
  return absl::StrCat("'", shown, "'");
}

}  // namespace

bool IsDns1123Label(absl::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  if (!IsLowerAlnum(name.front()) || !IsLowerAlnum(name.back())) return false;
  for (char c : name) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

bool IsDns1123Subdomain(absl::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (!IsDns1123Label(label)) return false;
  }
  return true;
}

absl::Status CheckNamespace(absl::string_view field, absl::string_view name) {
  if (IsDns1123Label(name)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": ", Quoted(name),
      " is not a DNS-1123 label (lowercase letters, digits and '-', 1..63, starting and ending with a letter or "
      "digit)"));
}

absl::Status CheckObjectName(absl::string_view field, absl::string_view name) {
  if (IsDns1123Subdomain(name)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": ", Quoted(name),
      " is not a DNS-1123 subdomain (dot-separated labels of lowercase letters, digits and '-', 1..253 in all)"));
}

std::string EscapePathSegment(absl::string_view segment) { return PercentEncode(segment); }
std::string EscapeQueryValue(absl::string_view value) { return PercentEncode(value); }

}  // namespace phasor::kubernetes
