// Workspace buffers reused from call to call (rnngraph/memory.hpp keeps their blocks).
// Contents are not initialised: every user writes before reading.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "rnngraph/memory.hpp"

namespace rnngraph {

// A workspace buffer of S: its memory comes from the blocks kept between calls
// (rnngraph/memory.hpp) and goes back there, unless it holds long-lived data (unpooled).
template <class S>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { resize(n); }
  Buffer(Buffer&& other) noexcept
      : block_(std::exchange(other.block_, KeptBlock{})), size_(other.size_), kept_(other.kept_) {}
  Buffer& operator=(Buffer&& other) noexcept {
    release();
    block_ = std::exchange(other.block_, KeptBlock{});
    size_ = other.size_;
    kept_ = other.kept_;
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }

  // Make room for n elements (their values are unspecified).
  void resize(size_t n) {
    if (block_.capacity >= n * sizeof(S)) {
      size_ = n;
      return;
    }
    release();
    block_ = take_block(n * sizeof(S));
    size_ = n;
  }
  // The memory is freed with the buffer instead of kept for the next call: for data that
  // lives as long as a Graph (its packed weights), not for a call's workspace.
  void unpooled() { kept_ = false; }
  S* data() { return static_cast<S*>(block_.data); }
  const S* data() const { return static_cast<const S*>(block_.data); }
  size_t size() const { return size_; }

 private:
  void release() {
    if (block_.data) {
      if (kept_) give_back_block(block_);
      else free_block(block_.data, block_.capacity);
    }
    block_ = KeptBlock{};
    size_ = 0;
  }

  KeptBlock block_;
  size_t size_ = 0;
  bool kept_ = true;
};

// A call's scratch of n zeros, as std::vector<S>(n) would give, on the kept blocks. A fresh
// vector of a few hundred KiB comes from glibc's heap, which hands it back to the system
// when the call frees it at the heap's top, and faults it in again on the next call: row 9
// (RNN T50 N16 H1760 train, 2 threads, a fresh process) took 160 page faults per call in
// its team loops' vectors on the 2-core EPYC (benchmarks/page_faults.py), none on kept
// blocks.
template <class S>
Buffer<S> zeroed_buffer(size_t n) {
  Buffer<S> out(n);
  std::fill(out.data(), out.data() + n, S(0));
  return out;
}

}  // namespace rnngraph
