// Private to the topology module. Debian's abseil is built with its own
// absl::string_view (not std::string_view), so the module's std::string_view
// values are converted before they reach absl::StrCat or a hash-map lookup.
#ifndef PHASOR_TOPOLOGY_ABSL_COMPAT_H_
#define PHASOR_TOPOLOGY_ABSL_COMPAT_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace phasor::topology {

inline absl::string_view AsAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

}  // namespace phasor::topology

#endif  // PHASOR_TOPOLOGY_ABSL_COMPAT_H_
