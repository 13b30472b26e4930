#include "output_pool.hpp"

#include <mutex>
#include <new>

#include "rnngraph/memory.hpp"

namespace rnngraph::bind {
namespace {

constexpr size_t kKeptBlocks = 16;              // at most this many blocks kept,
constexpr size_t kKeptBytes = size_t(1) << 31;  // and this many bytes in all

struct Pool {
  std::mutex mutex;
  std::vector<PooledBlock*> kept;  // most recently given back last
  size_t kept_bytes = 0;
};

// Never destroyed: an array may be freed during interpreter shutdown, after static
// destructors would have run.
Pool& pool() {
  static Pool* instance = new Pool;
  return *instance;
}

void destroy(PooledBlock* block) {
  free_block(block->data, block->capacity);
  delete block;
}

}  // namespace

PooledBlock* pool_take(size_t bytes) {
  if (bytes >= kPooledBytes) {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    // The most recent block that fits without wasting more than a quarter of itself.
    for (size_t i = p.kept.size(); i-- > 0;) {
      PooledBlock* block = p.kept[i];
      if (block->capacity >= bytes && block->capacity - bytes <= block->capacity / 4) {
        p.kept.erase(p.kept.begin() + static_cast<std::ptrdiff_t>(i));
        p.kept_bytes -= block->capacity;
        return block;
      }
    }
  }
  auto* block = new PooledBlock;
  block->data = allocate_block(bytes);
  block->capacity = bytes;
  return block;
}

void pool_give_back(PooledBlock* block) {
  if (block->capacity < kPooledBytes) return destroy(block);
  std::vector<PooledBlock*> dropped;
  {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    p.kept.push_back(block);
    p.kept_bytes += block->capacity;
    while (p.kept.size() > kKeptBlocks || p.kept_bytes > kKeptBytes) {
      dropped.push_back(p.kept.front());
      p.kept_bytes -= p.kept.front()->capacity;
      p.kept.erase(p.kept.begin());
    }
  }
  for (PooledBlock* b : dropped) destroy(b);
}

}  // namespace rnngraph::bind
