#include "rnngraph/memory.hpp"

#include <pthread.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <malloc.h>
#include <sys/mman.h>
#endif

#include "thread_scratch.hpp"

namespace rnngraph {
namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kHugePage = std::size_t(1) << 21;

// x rounded up to a multiple of `to`, a power of two.
constexpr std::uintptr_t rounded_up(std::uintptr_t x, std::size_t to) {
  return (x + to - 1) & ~std::uintptr_t(to - 1);
}

std::align_val_t alignment_for(std::size_t bytes) {
  return std::align_val_t{bytes >= kHugePage ? kHugePage : 64};
}

// Whether a block of this size is mapped by map_block (and unmapped by free_block) rather
// than taken from the C library's heap: the one test both sides of a block's life use.
constexpr bool mapped_directly(std::size_t bytes) {
#if defined(__linux__)
  return bytes >= kHugePage;
#else
  (void)bytes;
  return false;
#endif
}

#if defined(__linux__)
// Blocks of kHugePage or more are mapped by rnngraph itself, on a 2 MiB boundary, and unmapped
// when freed. Through glibc they could land in a worker thread's arena (glibc maps only blocks
// above a threshold it raises to the largest block freed so far, up to 32 MiB), where a freed
// block at the arena's top stays resident, huge pages included, and malloc_trim does not reach
// it: after a step over a batch of 65536 rows at 8 threads, 104 MiB of 4 MiB arena heaps
// stayed resident with nothing kept (16-core machine, tests/probes/probe_memory_driver.py).
// Each is marked for transparent huge pages.
void* map_block(std::size_t bytes) {
  const std::size_t length = rounded_up(bytes, kPage);
  if (length < bytes || length > SIZE_MAX - kHugePage) return nullptr;
  const std::size_t span = length + kHugePage;  // room to start on a 2 MiB boundary
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto at = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t start = rounded_up(at, kHugePage);
  const std::size_t head = start - at;
  if (head) munmap(raw, head);
  if (span - head > length) munmap(reinterpret_cast<char*>(start) + length, span - head - length);
#if defined(MADV_HUGEPAGE)
  madvise(reinterpret_cast<void*>(start), length, MADV_HUGEPAGE);  // advice: failure is harmless
#endif
  return reinterpret_cast<void*>(start);
}
#endif

// A block from the system, nullptr when none is to be had (free_block gives it back).
void* system_block(std::size_t bytes) {
#if defined(__linux__)
  if (mapped_directly(bytes)) return map_block(bytes);
#endif
  return ::operator new(bytes, alignment_for(bytes), std::nothrow);
}

// The kept blocks, shared by every thread, and the thread that releases them when idle.
struct Pool {
  std::mutex mutex;  // everything below
  std::condition_variable wake;
  std::vector<KeptBlock> kept;  // most recently given back last
  std::size_t bytes = 0;
  std::chrono::steady_clock::time_point last_use;
  bool releaser_running = false;  // the releaser thread exists (one per process)
  bool releaser_asleep = false;   // it waits, with no deadline, for a block to be kept
};

// Never destroyed: blocks may be given back during interpreter shutdown.
Pool& pool() {
  static Pool* instance = new Pool;
  return *instance;
}

// Called with the pool locked: every kept block, taken out of the pool.
std::vector<KeptBlock> take_all(Pool& p) {
  std::vector<KeptBlock> taken;
  taken.swap(p.kept);
  p.bytes = 0;
  return taken;
}

void free_all(std::vector<KeptBlock>&& blocks) {
  for (const KeptBlock& b : blocks) free_block(b.data, b.capacity);
  blocks.clear();
#if defined(__linux__)
  malloc_trim(0);  // glibc keeps freed heap pages mapped unless asked
#endif
}

// The releaser: one thread per process, for the process's life, asleep but for a wake-up
// when a block is kept after the pool was found empty, and one when the pool has been
// unused for kIdleRelease, when it empties it. (It never exits: a thread started and ended
// at every call cost a thread creation per call, and a thread ending while another thread
// forks leaves glibc's stack cache inconsistent in the child, whose next thread creation
// then aborts with "double free or corruption".)
// Each thread's scratch (thread_scratch.hpp) is released with the blocks.
void release_when_idle() {
  Pool& p = pool();
  std::unique_lock<std::mutex> lock(p.mutex);
  auto holding = [&] { return !p.kept.empty() || scratch_bytes() > 0; };
  for (;;) {
    if (!holding()) {
      p.releaser_asleep = true;
      p.wake.wait(lock, holding);
      p.releaser_asleep = false;
      continue;
    }
    const auto due = p.last_use + kIdleRelease;
    if (std::chrono::steady_clock::now() < due) {
      p.wake.wait_until(lock, due);
      continue;
    }
    std::vector<KeptBlock> dropped = take_all(p);
    lock.unlock();
    const bool all_scratch = release_unused_scratch();
    free_all(std::move(dropped));
    lock.lock();
    // A scratch leased all along (one long step product): again a period later, not at once.
    if (!all_scratch) p.wake.wait_for(lock, kIdleRelease);
  }
}

// Called with the pool locked, a block just kept: make sure the releaser counts down.
void start_releaser(Pool& p) {
  if (p.releaser_running) {
    if (p.releaser_asleep) p.wake.notify_one();
    return;
  }
  try {
    std::thread(release_when_idle).detach();
    p.releaser_running = true;
  } catch (const std::system_error&) {
    // No thread to be had (a resource limit): keep nothing rather than keep it forever.
    free_all(take_all(p));
  }
}

// fork: the pool's mutex is held across it, so the child's copy is consistent and
// unlocked; the child has no releaser thread until it keeps a block.
void lock_before_fork() { pool().mutex.lock(); }
void unlock_after_fork() { pool().mutex.unlock(); }
void unlock_in_child() {
  // The parent's releaser may wait on the condition variable: the child's copy would count
  // a waiter that does not exist here, so the child starts from a fresh one.
  new (&pool().wake) std::condition_variable;
  pool().releaser_running = false;
  pool().releaser_asleep = false;
  pool().mutex.unlock();
}
[[maybe_unused]] const int fork_handlers =
    pthread_atfork(lock_before_fork, unlock_after_fork, unlock_in_child);

std::string mib(std::size_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

// Fault a new checked block in now, so that the next block's check sees it used.
void fault_in(void* p, std::size_t bytes) {
#if defined(__linux__)
#if !defined(MADV_POPULATE_WRITE)
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older kernels refuse it (EINVAL)
#endif
  if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return;
#endif
  // (the contents are unspecified: write one byte a page)
  for (std::size_t at = 0; at < bytes; at += kPage) static_cast<volatile char*>(p)[at] = 0;
}

}  // namespace

AllocationError::AllocationError(std::size_t bytes, std::size_t available)
    : bytes_(bytes),
      message_("could not allocate " + std::to_string(bytes) + " bytes (" + mib(bytes) + ")" +
               (available ? ", more than the " + mib(available) + " this process can still get"
                          : std::string())) {}

std::size_t memory_short_of(std::size_t bytes) {
  if (bytes < kCheckedBytes) return 0;
  const std::size_t available = available_memory();
  return available && bytes > available ? available : 0;
}

void* allocate_block(std::size_t bytes) {
  if (memory_short_of(bytes)) release_kept_memory();  // what rnngraph keeps may be missing
  if (const std::size_t available = memory_short_of(bytes)) throw AllocationError(bytes, available);
  void* p = system_block(bytes);
  if (!p) {
    release_kept_memory();
    p = system_block(bytes);
  }
  if (!p) throw AllocationError(bytes);
  if (bytes >= kCheckedBytes) fault_in(p, bytes);
  return p;
}

void free_block(void* p, std::size_t bytes) {
  if (!p) return;
#if defined(__linux__)
  if (mapped_directly(bytes)) {
    munmap(p, rounded_up(bytes, kPage));
    return;
  }
#endif
  ::operator delete(p, alignment_for(bytes));
}

KeptBlock take_block(std::size_t bytes) {
  {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    p.last_use = std::chrono::steady_clock::now();
    auto best = p.kept.end();
    for (auto it = p.kept.begin(); it != p.kept.end(); ++it) {
      const bool fits = it->capacity >= bytes && it->capacity - bytes <= it->capacity / 2;
      if (fits && (best == p.kept.end() || it->capacity < best->capacity)) best = it;
    }
    if (best != p.kept.end()) {
      const KeptBlock block = *best;
      p.kept.erase(best);
      p.bytes -= block.capacity;
      return block;
    }
  }
  return {allocate_block(bytes), bytes};
}

void give_back_block(KeptBlock block) {
  if (!block.data) return;
  std::vector<KeptBlock> dropped;
  {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    p.last_use = std::chrono::steady_clock::now();
    p.kept.push_back(block);
    p.bytes += block.capacity;
    while (p.bytes > kKeptBytes) {  // the oldest go first
      dropped.push_back(p.kept.front());
      p.bytes -= p.kept.front().capacity;
      p.kept.erase(p.kept.begin());
    }
    start_releaser(p);
  }
  if (!dropped.empty()) free_all(std::move(dropped));
}

void release_kept_memory() {
  std::vector<KeptBlock> dropped;
  {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    dropped = take_all(p);
  }
  release_unused_scratch();
  free_all(std::move(dropped));
}

std::size_t kept_bytes() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.bytes + scratch_bytes();
}

void wake_releaser() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.last_use = std::chrono::steady_clock::now();
  start_releaser(p);
}

}  // namespace rnngraph
