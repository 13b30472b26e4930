// The CPUs this process may actually use, which is rnngraph's default thread count.
#pragma once

#include "rnngraph/threads.hpp"

namespace rnngraph::runtime {

// RNNGRAPH_NUM_THREADS when set to a positive integer; else the CPUs in this process's
// affinity mask (sched_getaffinity: taskset, numactl, a container's cpuset), lowered to the
// cgroup's CPU quota rounded up (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us /
// cpu.cfs_period_us: docker --cpus, Kubernetes limits). At least 1.
int default_threads();

}  // namespace rnngraph::runtime
