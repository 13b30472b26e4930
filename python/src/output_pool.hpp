// Output arrays on rnngraph's kept memory (rnngraph/memory.hpp). A fresh multi-megabyte
// NumPy array costs a page fault and the kernel's zeroing per 4 KiB on its first write
// (measured: 5-8 % of a large training step), so the big outputs of rnngraph's ops take
// blocks that earlier outputs and workspace gave back; when an array is freed its block goes
// back for the next call (and to the system once rnngraph is idle). Every output is 64-byte
// aligned (so the vectorised element-wise code splits its rows the same way on every run,
// and repeated runs give identical bits); such an array owns its memory through a capsule
// (its .base).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <new>
#include <string>
#include <vector>

#include "rnngraph/memory.hpp"
#include "shape_text.hpp"

namespace rnngraph::bind {

namespace py = pybind11;

// Outputs below this size are allocated and freed, not kept: glibc serves them from its heap
// (its default mmap threshold is 128 KiB). Larger ones are kept, since glibc's heap gives
// them back to the system when a call's outputs are freed at its top and faults them in
// again. Row 8 alone in a fresh process (LSTM T25 N16 H512 train; h, c and dL/dx 0.8 MB
// each), kept from 1 MiB up / from 128 KiB up (benchmarks/page_faults.py): 2-core EPYC
// 568 / 2 page faults per call at 1 thread, 420 / 0 at 2; 16-core Xeon 518 / 0 at 8 threads,
// 1166 / 0 at 16, where its median went 9.05 -> 7.66-7.94 ms
// (results/page-faults-2026-11-25.txt).
constexpr size_t kKeptOutputBytes = size_t(128) << 10;

// A block for an output of `bytes`, and its release when the array is freed.
KeptBlock* output_block(size_t bytes);
void release_output_block(KeptBlock* block);

// An output whose dims, times the item size, pass PY_SSIZE_T_MAX (NumPy's limit, which it
// applies to the non-zero dims even of an empty array: T = 0 with N = 2^60). Raised as a
// MemoryError naming the op (call_arguments.hpp, naming_memory_errors) where NumPy would
// give a ValueError that names nothing.
class OutputTooLarge : public std::bad_alloc {
 public:
  explicit OutputTooLarge(const std::vector<py::ssize_t>& dims)
      : message_("an output of shape " + shape_str(dims) + " is too large for an array") {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// The bytes an output of `dims` takes (1 for an empty one: a block to own), or
// OutputTooLarge.
template <class S>
size_t output_bytes(const std::vector<py::ssize_t>& dims) {
  size_t bytes = sizeof(S);
  bool empty = false;
  for (auto d : dims) {
    if (d == 0) {
      empty = true;
    } else if (bytes > size_t(PY_SSIZE_T_MAX) / static_cast<size_t>(d)) {
      throw OutputTooLarge(dims);
    } else {
      bytes *= static_cast<size_t>(d);
    }
  }
  return empty ? 1 : bytes;
}

template <class S>
py::array_t<S> pooled_array(const std::vector<py::ssize_t>& dims) {
  KeptBlock* block = output_block(output_bytes<S>(dims));
  py::capsule owner(block, [](void* p) { release_output_block(static_cast<KeptBlock*>(p)); });
  return py::array_t<S>(dims, static_cast<S*>(block->data), owner);
}

}  // namespace rnngraph::bind
