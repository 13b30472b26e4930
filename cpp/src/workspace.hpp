// Workspace buffers reused from call to call. A fresh multi-megabyte allocation costs a page
// fault per 4 KiB on first touch (plus the zeroing of std::vector), which for a training
// step is as much as its element-wise work; so each thread keeps the buffers it has used and
// hands them out again. Contents are not initialised: every user writes before reading.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "rnngraph/memory.hpp"
#include "tuning.hpp"

namespace rnngraph {

template <class S>
struct AlignedAllocator {
  using value_type = S;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  S* allocate(size_t n) { return static_cast<S*>(allocate_block(n * sizeof(S))); }
  void deallocate(S* p, size_t n) { free_block(p, n * sizeof(S)); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const AlignedAllocator<U>&) const {
    return false;
  }
};

template <class S>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { resize(n); }
  Buffer(Buffer&& other) noexcept : block_(std::move(other.block_)), size_(other.size_) {}
  Buffer& operator=(Buffer&& other) noexcept {
    release();
    block_ = std::move(other.block_);
    size_ = other.size_;
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }

  // Make room for n elements (their values are unspecified).
  void resize(size_t n) {
    if (block_ && block_->size() >= n) {
      size_ = n;
      return;
    }
    release();
    // The smallest kept block that fits: a larger one stays for a larger request (taking
    // the first that fits, a small buffer could take the block a big one needs next, which
    // would then be allocated afresh at every call).
    auto& pool = free_blocks();
    auto best = pool.end();
    for (auto it = pool.begin(); it != pool.end(); ++it) {
      if ((*it)->size() >= n && (best == pool.end() || (*it)->size() < (*best)->size())) best = it;
    }
    if (best != pool.end()) {
      block_ = std::move(*best);
      pool.erase(best);
      size_ = n;
      return;
    }
    block_ = std::make_unique<std::vector<S, AlignedAllocator<S>>>(n);
    size_ = n;
  }
  S* data() { return block_ ? block_->data() : nullptr; }
  const S* data() const { return block_ ? block_->data() : nullptr; }
  size_t size() const { return size_; }

 private:
  using Block = std::unique_ptr<std::vector<S, AlignedAllocator<S>>>;
  static std::vector<Block>& free_blocks() {
    thread_local std::vector<Block> pool;
    return pool;
  }
  void release() {
    if (!block_) return;
    auto& pool = free_blocks();
    if (pool.size() < tuning::kKeptWorkspaceBlocks) pool.push_back(std::move(block_));
    block_.reset();
    size_ = 0;
  }

  Block block_;
  size_t size_ = 0;
};

}  // namespace rnngraph
