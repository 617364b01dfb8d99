// Time-bin arithmetic shared by the flow counter and the counter series:
// which bin of width w a timestamp falls in, for timestamps before the
// origin too (floor, not C++'s truncation toward zero).
#ifndef PHASOR_PROBE_BINNING_H_
#define PHASOR_PROBE_BINNING_H_

#include <cstdint>

namespace phasor::probe {

// floor(a / b) for b > 0 (or b < 0), exact in integers.
inline int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_BINNING_H_
