#include "runtime/waiting.hpp"

#include <chrono>
#include <climits>
#include <sched.h>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__SSE2__) || defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace rnngraph::runtime {

void pause_once() {
#if defined(__SSE2__) || defined(__x86_64__)
  _mm_pause();
#endif
}

namespace {
#if defined(__linux__)
// The futex calls on the word's storage: std::atomic<uint32_t> is a plain 32-bit word.
void futex_wait(const std::atomic<std::uint32_t>* word, std::uint32_t seen) {
  syscall(SYS_futex, reinterpret_cast<const std::uint32_t*>(word), FUTEX_WAIT_PRIVATE, seen,
          nullptr, nullptr, 0);
}
void futex_wake_all(std::atomic<std::uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}
#else
// Elsewhere the sleep is a short one, again and again.
void futex_wait(const std::atomic<std::uint32_t>*, std::uint32_t) {
  std::this_thread::sleep_for(std::chrono::microseconds(50));
}
void futex_wake_all(std::atomic<std::uint32_t>*) {}
#endif
}  // namespace

void WaitWord::store_and_wake(std::uint32_t value) {
  // Sequentially consistent on both sides (here and in wait_while): either the sleeper sees
  // the new value before it sleeps, or this thread sees the sleeper and wakes it.
  value_.store(value, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(&value_);
}

long long now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void yield_core() { sched_yield(); }

std::uint32_t WaitWord::sleep_while(std::uint32_t seen) const {
  std::uint32_t now = seen;
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  while ((now = value_.load(std::memory_order_seq_cst)) == seen) futex_wait(&value_, seen);
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
  return now;
}

}  // namespace rnngraph::runtime
