// Collective throughput of the MPI Communicator next to the raw MPI call it wraps, same buffers,
// same run: shows what the tensor checks, watchdog tickets and bf16 widening cost.
// Usage: mpirun -np N bench_collectives [max_megabytes=64]
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "distributed/mpi_communicator.h"
#include "distributed/world.h"
#include "util/build_info.h"
#include "util/check.h"
#include "util/timer.h"

namespace {

// Median-free but steady: warm up twice, then repeat until ~0.5 s or 200 iterations.
double seconds_per_call(MPI_Comm comm, const std::function<void()>& call) {
  call();
  call();
  ST_CHECK_MPI(MPI_Barrier(comm));
  st::Timer timer;
  int iterations = 0;
  do {
    call();
    ++iterations;
  } while (timer.seconds() < 0.5 && iterations < 200);
  double elapsed = timer.seconds() / iterations;
  ST_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, comm));
  return elapsed;
}

void report(int rank, const char* operation, int64_t bytes, double raw, double ours) {
  if (rank != 0) return;
  std::printf("%-26s %10.3f MB %12.3f GB/s %12.3f GB/s %9.2f\n", operation, bytes / 1e6,
              bytes / raw / 1e9, bytes / ours / 1e9, ours / raw);
}

}  // namespace

int main(int argc, char** argv) {
  st::World world(argc, argv);
  const double max_megabytes = argc > 1 ? std::atof(argv[1]) : 64.0;
  st::MpiCommunicator comm(world.comm(), world.watchdog());
  const MPI_Comm raw = comm.comm();
  const int ranks = world.size();
  if (world.rank() == 0) {
    std::printf("collectives on %d ranks (%s); bandwidth = bytes of the full buffer / time\n",
                ranks, st::mpi_library_version().c_str());
    std::printf("%-26s %13s %17s %17s %9s\n", "operation", "full buffer", "raw MPI",
                "Communicator", "time x");
  }
  for (double megabytes = 0.001; megabytes <= max_megabytes * 1.0001; megabytes *= 8) {
    const int64_t count = std::max<int64_t>(ranks, static_cast<int64_t>(megabytes * 1e6 / 4)) /
                          ranks * ranks;
    const int64_t shard_count = count / ranks;
    const int64_t bytes = count * 4;
    const at::Tensor full = at::rand({count});
    const at::Tensor shard = at::rand({shard_count});
    const int n = static_cast<int>(shard_count);

    const double raw_gather = seconds_per_call(raw, [&] {
      ST_CHECK_MPI(MPI_Allgather(shard.data_ptr(), n, MPI_FLOAT, full.data_ptr(), n, MPI_FLOAT, raw));
    });
    const double our_gather = seconds_per_call(raw, [&] { comm.all_gather_into(full, shard); });
    report(world.rank(), "all_gather fp32", bytes, raw_gather, our_gather);

    const double raw_scatter = seconds_per_call(raw, [&] {
      ST_CHECK_MPI(MPI_Reduce_scatter_block(full.data_ptr(), shard.data_ptr(), n, MPI_FLOAT, MPI_SUM, raw));
    });
    const double our_scatter =
        seconds_per_call(raw, [&] { comm.reduce_scatter(shard, full, st::ReduceOp::avg); });
    report(world.rank(), "reduce_scatter avg fp32", bytes, raw_scatter, our_scatter);

    const at::Tensor full_bf16 = full.to(at::kBFloat16);
    const at::Tensor shard_bf16 = shard.to(at::kBFloat16);
    const double our_scatter_bf16 = seconds_per_call(
        raw, [&] { comm.reduce_scatter(shard_bf16, full_bf16, st::ReduceOp::avg); });
    // Same element count: the fp32 raw call is the baseline; bf16 pays widening both ways.
    report(world.rank(), "reduce_scatter avg bf16", bytes / 2, raw_scatter, our_scatter_bf16);

    const double raw_reduce = seconds_per_call(raw, [&] {
      ST_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, full.data_ptr(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, raw));
    });
    const double our_reduce =
        seconds_per_call(raw, [&] { comm.all_reduce(full, st::ReduceOp::sum); });
    report(world.rank(), "all_reduce sum fp32", bytes, raw_reduce, our_reduce);
  }
  return 0;
}
