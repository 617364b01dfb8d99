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

constexpr absl::string_view kZ85Alphabet =
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
    if (kZ85Alphabet.find(c) == absl::string_view::npos) return false;
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

namespace {

absl::StatusOr<std::string> ReadKeyFor(absl::string_view field, const std::string& path) {
  absl::StatusOr<std::string> key = ReadKeyFile(path);
  if (!key.ok()) return absl::InvalidArgumentError(absl::StrCat(field, ": ", key.status().message()));
  return key;
}

}  // namespace

absl::StatusOr<std::optional<CurveClientKeys>> LoadCurveClientKeyFiles(const KeyFile& server_public,
                                                                       const KeyFile& client_public,
                                                                       const KeyFile& client_secret) {
  const KeyFile* files[] = {&server_public, &client_public, &client_secret};
  const KeyFile* given = nullptr;
  for (const KeyFile* f : files) {
    if (!f->path.empty()) given = f;
  }
  if (given == nullptr) return std::nullopt;
  for (const KeyFile* f : files) {
    if (f->path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(f->field, ": required with ", given->field, " (CURVE keys: all three files or none)"));
    }
  }
  std::string keys[3];
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::string> key = ReadKeyFor(files[i]->field, files[i]->path);
    if (!key.ok()) return key.status();
    keys[i] = *std::move(key);
  }
  return CurveClientKeys{keys[0], keys[1], keys[2]};
}

absl::StatusOr<CurveClientKeys> LoadCurveClientKeys(const std::string& server_key_file,
                                                    const std::string& client_key_prefix,
                                                    absl::string_view server_field, absl::string_view client_field) {
  absl::StatusOr<std::optional<CurveClientKeys>> keys =
      LoadCurveClientKeyFiles({server_field, server_key_file}, {client_field, client_key_prefix + ".pub"},
                              {client_field, client_key_prefix + ".secret"});
  if (!keys.ok()) return keys.status();
  return **keys;  // the three paths are never empty together
}

absl::StatusOr<CurveKeyPair> LoadCurveServerKeys(const std::string& secret_key_file, const std::string& public_key_file,
                                                 absl::string_view secret_field, absl::string_view public_field) {
  absl::StatusOr<std::string> sec = ReadKeyFor(secret_field, secret_key_file);
  if (!sec.ok()) return sec.status();
  absl::StatusOr<std::string> pub = ReadKeyFor(public_field, public_key_file);
  if (!pub.ok()) return pub.status();
  return CurveKeyPair{*pub, *sec};
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
