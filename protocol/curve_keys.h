// CURVE key material for phasord and its clients: Z85-encoded key files (one
// 40-character key per file, as `phasor keygen` writes them) and allow-lists
// (one public key per line; blank lines and lines starting with '#' skipped).
#ifndef PHASOR_PROTOCOL_CURVE_KEYS_H_
#define PHASOR_PROTOCOL_CURVE_KEYS_H_

#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace phasor::protocol {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

// A fresh key pair. Unavailable when libzmq was built without CURVE.
absl::StatusOr<CurveKeyPair> GenerateCurveKeyPair();

// True for a 40-character Z85 string.
bool IsZ85Key(const std::string& key);

// Writes `<prefix>.pub` (mode 0644) and `<prefix>.secret` (mode 0600), one key
// and a newline each. AlreadyExists unless `overwrite`.
absl::Status WriteKeyPair(const CurveKeyPair& pair, const std::string& prefix, bool overwrite);

// Reads one key file (surrounding whitespace ignored). InvalidArgument naming
// the file when it does not hold exactly one Z85 key; NotFound when missing.
absl::StatusOr<std::string> ReadKeyFile(const std::string& path);

// Reads an allow-list file. InvalidArgument naming file and line for a line
// that is not a Z85 key.
absl::StatusOr<std::set<std::string>> ReadAllowList(const std::string& path);

}  // namespace phasor::protocol

#endif  // PHASOR_PROTOCOL_CURVE_KEYS_H_
