// Memory for rnngraph's buffers and output arrays.
//
// Blocks are 64-byte (cache line, AVX-512 vector) aligned; blocks of 2 MiB or more are mapped
// by rnngraph itself (not through malloc, so that freeing one returns it to the system at
// once), aligned to 2 MiB and marked for transparent huge pages (Linux's default THP mode,
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
  // (`available`: what the process could still get, when that is why; 0 otherwise)
  explicit AllocationError(std::size_t bytes, std::size_t available = 0);
  const char* what() const noexcept override { return message_.c_str(); }
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_;
  std::string message_;
};

// A new aligned block (AllocationError when it cannot be had), and its release.
//
// A block of kCheckedBytes or more is first checked against available_memory(), and faulted
// in as soon as it is allocated. Where the kernel overcommits (Linux's default), an
// allocation larger than what is left succeeds, and the process is killed by the OOM killer
// once the block is written: two 16 GiB outputs of one call on a 23 GiB machine were. A
// block faulted in at once counts in the next block's check. 64 MiB: the check (reading
// /proc/meminfo and the cgroup's files) takes 0.1 ms, 1.4 % of the 7 ms that first writing
// 64 MiB takes (2-core EPYC); the faulting is the cost the block's first use pays anyway.
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

// The bytes this process can still get: the system's available memory and free swap
// (/proc/meminfo's MemAvailable and SwapFree), or less where its cgroup or an ancestor of it
// limits memory (cgroup v2's memory.max, v1's memory.limit_in_bytes, less what the group
// uses); 0 when unknown (then nothing is checked).
std::size_t available_memory();
// 0 when a new block of `bytes` passes allocate_block's check (always below kCheckedBytes,
// or where available_memory() is unknown); else the bytes available, fewer than `bytes`.
std::size_t memory_short_of(std::size_t bytes);
// For tests: available_memory() leaves out `bytes` more (0: nothing), so that a test can
// leave a process little memory without filling the machine's.
void set_memory_reserve(std::size_t bytes);
// The lowest memory limit less usage over the cgroups that `cgroup_file` (the text of
// /proc/self/cgroup) names and their ancestors, under `root` ("/sys/fs/cgroup"); -1 for none.
double cgroup_memory_left(const std::string& cgroup_file, const std::string& root);
constexpr std::size_t kCheckedBytes = std::size_t(64) << 20;

// Kept blocks are released after this long without a call; at most this many bytes are kept.
constexpr std::chrono::milliseconds kIdleRelease{1000};
constexpr std::size_t kKeptBytes = std::size_t(2) << 30;

}  // namespace rnngraph
