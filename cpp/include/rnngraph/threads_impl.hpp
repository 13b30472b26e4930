// Template part of threads.hpp.
#pragma once

#include <exception>
#include <thread>
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
  std::vector<std::thread> workers;
  for (int i = 1; i < count; ++i) workers.emplace_back(guarded, i);
  guarded(0);
  for (auto& w : workers) w.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace rnngraph
