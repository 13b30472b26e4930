// How a thread waits for a 32-bit word to change: it spins briefly (the change is usually a
// few microseconds away), then for a while gives its core away (sched_yield) or, where the
// waiter says no thread it waits for needs that core, keeps spinning; then it sleeps on the
// word (a futex) until whoever changes it wakes it. Nothing spins without bound.
#pragma once

#include <atomic>
#include <cstdint>

namespace rnngraph::runtime {

// What a waiting thread does next, once its first spin is over (WaitWord::wait_while).
enum class WaitChoice { spin, yield, sleep };

// A word that threads wait on and one thread changes.
class WaitWord {
 public:
  explicit WaitWord(std::uint32_t value = 0) : value_(value) {}
  std::uint32_t load() const { return value_.load(std::memory_order_acquire); }
  // Sets the word and wakes every thread sleeping on it.
  void store_and_wake(std::uint32_t value);
  // Returns once the word differs from `seen` (at once if it does already): spins for
  // `spin_us` microseconds; for `patience_us` more, asks choose() each time: spins a little,
  // yields its core, or sleeps at once; then sleeps. Returns the new value.
  template <class Choose>
  std::uint32_t wait_while(std::uint32_t seen, long spin_us, long patience_us,
                           Choose&& choose) const;

 private:
  std::uint32_t sleep_while(std::uint32_t seen) const;  // the futex, until the word changes

  std::atomic<std::uint32_t> value_;
  mutable std::atomic<int> sleepers_{0};
};

// One pause instruction (a spin-wait hint), or nothing where there is none.
void pause_once();

// sched_yield: this thread's core to another runnable thread, if the scheduler has one.
void yield_core();

// Calls done() between pauses for up to `spin_us` microseconds; whether it returned true.
template <class Done>
bool spin_until(Done&& done, long spin_us);

// Microseconds on a steady clock.
long long now_us();

template <class Done>
bool spin_until(Done&& done, long spin_us) {
  const long long start = now_us();
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    pause_once();
    if (i % 16 == 0 && now_us() - start >= spin_us) return done();
  }
}

template <class Choose>
std::uint32_t WaitWord::wait_while(std::uint32_t seen, long spin_us, long patience_us,
                                   Choose&& choose) const {
  std::uint32_t now = seen;
  auto changed = [&] { return (now = load()) != seen; };
  if (spin_until(changed, spin_us)) return now;
  const long long start = now_us();
  while (now_us() - start < patience_us) {
    if (changed()) return now;
    const WaitChoice next = choose();
    if (next == WaitChoice::sleep) break;
    if (next == WaitChoice::yield) {
      yield_core();
    } else {
      for (int i = 0; i < 16; ++i) pause_once();
    }
  }
  return sleep_while(seen);
}

}  // namespace rnngraph::runtime
