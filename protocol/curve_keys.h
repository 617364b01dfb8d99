// CURVE key material for phasord and its clients: Z85-encoded key files (one
// 40-character key per file, as `phasor keygen` writes them) and allow-lists
// (one public key per line; blank lines and lines starting with '#' skipped).
#ifndef PHASOR_PROTOCOL_CURVE_KEYS_H_
#define PHASOR_PROTOCOL_CURVE_KEYS_H_

#include <optional>
#include <set>
#include <string>
#include "absl/strings/string_view.h"

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

// A client's CURVE keys (Z85, 40 characters each) for a CURVE phasord.
struct CurveClientKeys {
  std::string server_public_key;
  std::string client_public_key;
  std::string client_secret_key;
};

// One key file and the option (or variable) that named it.
struct KeyFile {
  absl::string_view field;  // e.g. "phasord_server_public_key_file", "--server-key"
  std::string path;         // empty: not given
};

// A client's three key files (phasord's public key, the client's public and
// secret keys), all or none: nullopt when none is given. InvalidArgument
// whose message starts with the field: one that is missing while another is
// given ("f: required with g (CURVE keys: all three files or none)"), or a
// file that is missing or holds no Z85 key ("f: PATH: ..."). Every CURVE
// client of phasord loads its keys with this (or LoadCurveClientKeys).
absl::StatusOr<std::optional<CurveClientKeys>> LoadCurveClientKeyFiles(const KeyFile& server_public,
                                                                       const KeyFile& client_public,
                                                                       const KeyFile& client_secret);

// Loads a client's keys: phasord's public key file and the client's pair as
// `phasor keygen --out PREFIX` writes it (PREFIX.pub, PREFIX.secret).
// InvalidArgument whose message starts with `server_field` or `client_field`
// (the option or variable that named the file) and names the file.
absl::StatusOr<CurveClientKeys> LoadCurveClientKeys(const std::string& server_key_file,
                                                    const std::string& client_key_prefix,
                                                    absl::string_view server_field = "server key",
                                                    absl::string_view client_field = "client keys");

// A server's key pair from its two files; InvalidArgument naming the field.
absl::StatusOr<CurveKeyPair> LoadCurveServerKeys(const std::string& secret_key_file, const std::string& public_key_file,
                                                 absl::string_view secret_field, absl::string_view public_field);

// Reads an allow-list file. InvalidArgument naming file and line for a line
// that is not a Z85 key.
absl::StatusOr<std::set<std::string>> ReadAllowList(const std::string& path);

}  // namespace phasor::protocol

#endif  // PHASOR_PROTOCOL_CURVE_KEYS_H_
