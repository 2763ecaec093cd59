// How many CPU threads one rank computes with, and making libtorch and OpenBLAS use that many.
#pragma once

namespace st {

// OMP_NUM_THREADS where it is set to a positive number (the user's choice; launch.slurm sets it
// from --cpus-per-task); else the cores the launcher bound the rank to (sched_getaffinity); else,
// where it was not bound (the affinity is the whole machine), the machine's cores split evenly
// over the ranks on this node. Without this every rank would run with all cores and N ranks
// would oversubscribe the node N times.
int cpu_threads_per_rank(int ranks_on_node);

// libtorch's intra-op threads and OpenBLAS's thread pool to `threads`. OpenBLAS sizes its pool
// as it loads, from OPENBLAS_NUM_THREADS or OMP_NUM_THREADS, else from all the machine's cores,
// whatever libtorch uses: ranks that share a node would each start a GEMM on every core, and
// OpenBLAS's idle workers poll (sched_yield) between GEMMs. An OPENBLAS_NUM_THREADS the user set
// is kept.
void use_cpu_threads(int threads);

// use_cpu_threads(cpu_threads_per_rank(ranks_on_node)): what a command computing on the CPU does first.
void use_rank_share_of_cores(int ranks_on_node);

}  // namespace st
