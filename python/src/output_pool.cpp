#include "output_pool.hpp"

#include <memory>

namespace rnngraph::bind {

KeptBlock* output_block(size_t bytes) {
  auto block = std::make_unique<KeptBlock>(
      bytes >= kKeptOutputBytes ? take_block(bytes) : KeptBlock{allocate_block(bytes), bytes});
  return block.release();
}

void release_output_block(KeptBlock* block) {
  if (block->capacity >= kKeptOutputBytes) give_back_block(*block);
  else free_block(block->data, block->capacity);
  delete block;
}

}  // namespace rnngraph::bind
