// Output arrays backed by reused memory. A fresh multi-megabyte NumPy array costs a page
// fault and the kernel's zeroing per 4 KiB on its first write (measured: 5-8 % of a large
// training step), so the big outputs of rnngraph's ops come from a small pool that takes
// their memory back when the arrays are freed; the next call's outputs of the same size
// reuse it, already mapped. Every output is 64-byte aligned (so the vectorised element-wise
// code splits its rows the same way on every run, and repeated runs give identical bits);
// such an array owns its memory through a capsule (its .base).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace rnngraph::bind {

namespace py = pybind11;

struct PooledBlock {
  void* data = nullptr;
  size_t capacity = 0;  // bytes
};

// A block of at least `bytes` (64-byte aligned): a kept one that fits, else a new one.
PooledBlock* pool_take(size_t bytes);
// Give a block back: the pool keeps the most recent few and frees the rest.
void pool_give_back(PooledBlock* block);

// Blocks below this size are freed, not kept (no page faults worth saving).
constexpr size_t kPooledBytes = size_t(1) << 20;

template <class S>
py::array_t<S> pooled_array(const std::vector<py::ssize_t>& dims) {
  size_t count = 1;
  for (auto d : dims) count *= static_cast<size_t>(d);
  PooledBlock* block = pool_take(std::max<size_t>(count * sizeof(S), 1));
  py::capsule owner(block, [](void* p) { pool_give_back(static_cast<PooledBlock*>(p)); });
  return py::array_t<S>(dims, static_cast<S*>(block->data), owner);
}

}  // namespace rnngraph::bind
