#include "protocol/curve_keys.h"

#include <sys/stat.h>
#include <zmq.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"

namespace phasor::protocol {
namespace {

constexpr std::string_view kZ85Alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

absl::Status WriteFile(const std::string& path, const std::string& text, mode_t mode, bool overwrite) {
  struct stat st;
  if (!overwrite && ::stat(path.c_str(), &st) == 0) {
    return absl::AlreadyExistsError(absl::StrCat(path, ": exists (pass --force to overwrite)"));
  }
  std::ofstream out(path, std::ios::trunc);
  if (!out) return absl::UnavailableError(absl::StrCat(path, ": cannot write: ", std::strerror(errno)));
  out << text << "\n";
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat(path, ": write failed"));
  if (::chmod(path.c_str(), mode) != 0) {
    return absl::UnavailableError(absl::StrCat(path, ": chmod: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CurveKeyPair> GenerateCurveKeyPair() {
  char pub[41] = {};
  char sec[41] = {};
  if (zmq_curve_keypair(pub, sec) != 0) {
    return absl::UnavailableError(absl::StrCat("zmq_curve_keypair: ", zmq_strerror(zmq_errno())));
  }
  return CurveKeyPair{pub, sec};
}

bool IsZ85Key(const std::string& key) {
  if (key.size() != 40) return false;
  for (char c : key) {
    if (kZ85Alphabet.find(c) == std::string_view::npos) return false;
  }
  return true;
}

absl::Status WriteKeyPair(const CurveKeyPair& pair, const std::string& prefix, bool overwrite) {
  if (absl::Status s = WriteFile(prefix + ".secret", pair.secret_key, 0600, overwrite); !s.ok()) return s;
  return WriteFile(prefix + ".pub", pair.public_key, 0644, overwrite);
}

absl::StatusOr<std::string> ReadKeyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open key file"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string key(absl::StripAsciiWhitespace(buffer.str()));
  if (!IsZ85Key(key)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a 40-character Z85 CURVE key"));
  }
  return key;
}

absl::StatusOr<std::set<std::string>> ReadAllowList(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open allow-list"));
  std::set<std::string> keys;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::string key(absl::StripAsciiWhitespace(line));
    if (key.empty() || key[0] == '#') continue;
    if (!IsZ85Key(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", number, ": not a 40-character Z85 public key"));
    }
    keys.insert(key);
  }
  return keys;
}

}  // namespace phasor::protocol
