// Template part of threads.hpp.
#pragma once

#include <exception>
#include <functional>
#include <vector>

namespace rnngraph {

// Marks the calling thread as a part of a run_parts call while alive.
class ParallelPartScope {
 public:
  ParallelPartScope();
  ~ParallelPartScope();
  ParallelPartScope(const ParallelPartScope&) = delete;
  ParallelPartScope& operator=(const ParallelPartScope&) = delete;

 private:
  bool saved_;
};

// Run job(0) here and job(1) .. job(count - 1) at the same time on other threads: rnngraph's
// resident workers (started once, asleep between calls), or fresh threads if another call
// holds them. Returns when every job has returned.
void run_concurrently(int count, const std::function<void(int)>& job);

template <class Body>
void run_parts(int count, bool concurrent, Body&& body) {
  if (!concurrent || count < 2) {
    for (int i = 0; i < count; ++i) body(i);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(count));
  auto guarded = [&](int i) {
    try {
      FlushDenormals flush;
      ParallelPartScope scope;
      body(i);
    } catch (...) {
      errors[static_cast<size_t>(i)] = std::current_exception();
    }
  };
  run_concurrently(count, guarded);
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace rnngraph
