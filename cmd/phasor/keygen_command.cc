// `phasor keygen --out PREFIX`: a CURVE key pair for phasord or one of its
// clients, written to PREFIX.secret (mode 0600) and PREFIX.pub; the public key
// is also printed, ready to paste into phasord's allowed_clients_file.
#include <iostream>
#include <string>

#include "cmd/phasor/commands.h"
#include "protocol/curve_keys.h"

namespace phasor::cmd {

void AddKeygenCommand(CLI::App& app) {
  struct Flags {
    std::string out;
    bool force = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "keygen", "Make a CURVE key pair for phasord or a client: PREFIX.secret (0600) and PREFIX.pub.");
  sub->add_option("--out,-o", flags->out, "path prefix of the two key files")->required();
  sub->add_flag("--force", flags->force, "overwrite existing key files");
  sub->callback([flags] {
    absl::StatusOr<protocol::CurveKeyPair> pair = protocol::GenerateCurveKeyPair();
    if (!pair.ok()) {
      std::cerr << "phasor keygen: " << pair.status().message() << "\n";
      throw CLI::RuntimeError(kExitFailure);
    }
    if (absl::Status s = protocol::WriteKeyPair(*pair, flags->out, flags->force); !s.ok()) {
      std::cerr << "phasor keygen: " << s.message() << "\n";
      throw CLI::RuntimeError(absl::IsAlreadyExists(s) ? kExitBadInput : kExitFailure);
    }
    std::cout << pair->public_key << "\n";
  });
}

}  // namespace phasor::cmd
