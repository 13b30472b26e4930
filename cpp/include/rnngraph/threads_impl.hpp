// Template part of threads.hpp.
#pragma once

#include <exception>
#include <thread>
#include <vector>

namespace rnngraph {

template <class Body>
void run_parts(int count, bool concurrent, Body&& body) {
  if (!concurrent || count < 2) {
    for (int i = 0; i < count; ++i) body(i);
    return;
  }
  SerialBlasSection serial_blas;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(count));
  auto guarded = [&](int i) {
    try {
      FlushDenormals flush;
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
