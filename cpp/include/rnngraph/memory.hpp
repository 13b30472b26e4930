// Memory for rnngraph's buffers and output arrays.
//
// Blocks are 64-byte (cache line, AVX-512 vector) aligned; blocks of 2 MiB or more are
// aligned to 2 MiB and marked for transparent huge pages (Linux's default THP mode,
// "madvise", gives them only to marked memory). The kernels stream over tens of megabytes
// of weights and sequences; with 2 MiB pages they touch 512 times fewer pages.
//
// A fresh multi-megabyte block costs a page fault and the kernel's zeroing per 4 KiB on its
// first use, as much as a training step's element-wise work; so blocks given back are kept
// for the next call (take_block reuses them) and returned to the system once rnngraph has
// been idle for kIdleRelease (a background thread waits for that, using no CPU), or at once
// by release_kept_memory(). After the user's arrays and Graphs are gone, the process's
// memory returns to where it was within that second.
#pragma once

#include <chrono>
#include <cstddef>
#include <new>
#include <string>

namespace rnngraph {

// What a failed allocation throws: a std::bad_alloc whose message gives the size asked for.
class AllocationError : public std::bad_alloc {
 public:
  explicit AllocationError(std::size_t bytes);
  const char* what() const noexcept override { return message_.c_str(); }
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_;
  std::string message_;
};

// A new aligned block (AllocationError when it cannot be had), and its release.
void* allocate_block(std::size_t bytes);
void free_block(void* p, std::size_t bytes);

struct KeptBlock {
  void* data = nullptr;
  std::size_t capacity = 0;  // bytes
};

// A block of at least `bytes`: the smallest kept one that fits without wasting more than
// half of itself, else a new one.
KeptBlock take_block(std::size_t bytes);
// Give a block back: kept for the next call (up to kKeptBytes), released when idle.
void give_back_block(KeptBlock block);
// Return every kept block to the system now.
void release_kept_memory();
// Bytes kept now.
std::size_t kept_bytes();

// Kept blocks are released after this long without a call; at most this many bytes are kept.
constexpr std::chrono::milliseconds kIdleRelease{1000};
constexpr std::size_t kKeptBytes = std::size_t(2) << 30;

}  // namespace rnngraph
