// Memory for rnngraph's buffers and output arrays: 64-byte (cache line, AVX-512 vector)
// aligned, and blocks of 2 MiB or more aligned to 2 MiB and marked for transparent huge
// pages (Linux's default THP mode, "madvise", gives them only to marked memory). The kernels
// stream over tens of megabytes of weights and sequences; with 2 MiB pages they touch 512
// times fewer pages and miss the TLB far less.
#pragma once

#include <cstddef>

namespace rnngraph {

// Throws std::bad_alloc when the memory cannot be had.
void* allocate_block(std::size_t bytes);
// Frees a block from allocate_block; `bytes` is the size it was allocated with.
void free_block(void* p, std::size_t bytes);

}  // namespace rnngraph
