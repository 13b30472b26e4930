// Scratch memory each thread keeps for itself across calls: the rows a step product copies
// (packed_gemm.cpp), used at every step of a time loop, so that no step allocates. Like the
// kept blocks (rnngraph/memory.hpp) it is returned to the system once rnngraph has been idle
// for kIdleRelease, or at once by release_kept_memory(), and kept_bytes() counts it: a
// thread-local buffer that only grew kept, for the thread's life, as much as the largest
// batch's rows (156 MiB per thread after a batch of 20000 at H = 512).
#pragma once

#include <cstddef>

namespace rnngraph {

struct Scratch;

// This thread's scratch of at least `bytes` (64-byte aligned), its own until the lease ends.
// Growing it may throw AllocationError.
class ScratchLease {
 public:
  explicit ScratchLease(std::size_t bytes);
  ~ScratchLease();
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  void* data() const { return data_; }

 private:
  Scratch* scratch_;
  void* data_ = nullptr;
};

// For memory.cpp's releaser: the bytes every thread's scratch holds, and the release of every
// scratch not leased now (true when none is left).
std::size_t scratch_bytes();
bool release_unused_scratch();
// Implemented by memory.cpp, when a scratch grows: the releaser counts down to the next idle
// release from now.
void wake_releaser();

}  // namespace rnngraph
