// Scratch buffers for the solvers' inner loops, reused across calls on the
// same thread. A unified circle has up to 65536 bins: its load arrays are
// hundreds of KiB, which the allocator would map and page-fault afresh on
// every solve; a solve would then spend more time in the kernel than in the
// loop. Internal to the placer.
//
// Thread-safety: the pool is per thread; a ScratchBuffer must be released on
// the thread that took it (it is a scoped object, so it is).
#ifndef PHASOR_PLACER_SCRATCH_H_
#define PHASOR_PLACER_SCRATCH_H_

#include <cstddef>
#include <vector>

namespace phasor::placer {

class ScratchBuffer {
 public:
  // A buffer of `size` doubles, all set to `fill`.
  explicit ScratchBuffer(size_t size, double fill = 0.0);
  // A buffer of `size` doubles whose values are left over from earlier use:
  // for callers that write every element before reading it.
  struct Uninitialized {};
  ScratchBuffer(size_t size, Uninitialized);
  ~ScratchBuffer();
  ScratchBuffer(ScratchBuffer&& other) noexcept;
  ScratchBuffer& operator=(ScratchBuffer&& other) noexcept;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  std::vector<double>& get() { return data_; }
  const std::vector<double>& get() const { return data_; }

 private:
  std::vector<double> data_;
  bool owned_ = true;
};

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_SCRATCH_H_
