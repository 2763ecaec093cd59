// The GPU's gated delta rule kernels' own code (cuda/gated_delta_programs.h's block programs) run
// on the host, each block's lanes as threads meeting at a barrier where a kernel syncs:
// - in float64 against the token-by-token definition (values, final state, every input's
//   gradient), at lengths around and across the chunk, with two value blocks; bound 1e-10 as
//   test_gated_delta_rule.cpp argues it (float64 rounding over sums of a few thousand terms of
//   magnitude <= 1 stays below 1e-12 relative);
// - in float32 against the same float64 judge, no farther than 10x what libtorch's fp32 chunked
//   path (the CPU path: the same algorithm in the same precision, its own summation order) is;
// - with 1 and 3 lanes, bit for bit: each element's arithmetic is the same whichever lane runs it,
//   so a difference is a read racing a write between two syncs;
// - on packed rows (a chunk table: each sequence's chunks from its start, its state from zeros),
//   in float64 against each sequence's own recurrence, gradients included (nothing crosses a
//   sequence start either way).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda/gated_delta_programs.h"
#include "model/gated_delta_rule.h"

namespace st {
namespace {

using st_gated_delta::Problem;

constexpr double kFloat64Bound = 1e-10;

// A kernel's __syncthreads for lanes that are threads.
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int64_t generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      released_.notify_all();
    } else {
      released_.wait(lock, [&] { return generation != generation_; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  int count_, waiting_ = 0;
  int64_t generation_ = 0;
};

struct ThreadLanes {
  int lane, lanes;
  Barrier* barrier;
  int rank() const { return lane; }
  int count() const { return lanes; }
  void sync() const { barrier->wait(); }
};

template <typename Real>
void run_on_host(const Problem<Real>& p, bool backward, int lanes) {
  const st_gated_delta::Workspace<Real> w = st_gated_delta::bind_workspace(p, backward, p.workspace);
  const auto launch = [&](auto program, int64_t blocks_x, int64_t blocks_y) {
    using Program = decltype(program);
    for (int64_t x = 0; x < blocks_x; ++x) {
      for (int64_t y = 0; y < blocks_y; ++y) {
        Barrier barrier(lanes);
        std::vector<std::thread> threads;
        for (int lane = 0; lane < lanes; ++lane) {
          threads.emplace_back([&, lane] { Program::run(ThreadLanes{lane, lanes, &barrier}, p, w, x, y); });
        }
        for (std::thread& thread : threads) thread.join();
      }
    }
  };
  if (backward) {
    st_gated_delta::run_backward(p, launch);
  } else {
    st_gated_delta::run_forward(p, launch);
  }
}

// Outputs, final state, then the gradients of q, k, v, g, beta, initial state.
using Results = std::vector<at::Tensor>;
const char* const kNames[] = {"out", "final_state", "q", "k", "v", "g", "beta", "initial_state"};

template <typename Real>
Real* pointer(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<Real>() : nullptr;
}

// The programs' forward then backward for the upstream gradients weight_out, weight_state;
// `starts`: packed rows (weight_state and the initial state unused).
template <typename Real>
Results run_programs(const GatedDeltaInputs& in, const at::Tensor& weight_out, const at::Tensor& weight_state,
                     int64_t chunk, int lanes, const std::vector<int64_t>* starts = nullptr) {
  const at::ScalarType type = c10::CppTypeToScalarType<Real>::value;
  const auto host = [&](const at::Tensor& t) { return t.defined() ? t.to(type).contiguous() : at::Tensor(); };
  const at::Tensor q = host(in.q), k = host(in.k), v = host(in.v), g = host(in.g), beta = host(in.beta);
  const at::Tensor state = host(in.initial_state);
  Problem<Real> p;
  p.heads = q.size(0) * q.size(1), p.length = q.size(2), p.key_dim = q.size(3), p.value_dim = v.size(3);
  p.chunk = chunk;
  p.q = pointer<Real>(q), p.k = pointer<Real>(k), p.v = pointer<Real>(v), p.g = pointer<Real>(g);
  p.beta = pointer<Real>(beta), p.initial_state = pointer<Real>(state);
  st_gated_delta::ChunkTable table;
  if (starts) {
    table = st_gated_delta::chunk_table(*starts, chunk);
    p.chunk_first = table.first.data(), p.chunk_opens = table.opens.data();
    p.chunks = static_cast<int64_t>(table.opens.size());
  }
  const at::Tensor out = at::empty_like(v);
  const at::Tensor final_state = at::empty({q.size(0), q.size(1), q.size(3), v.size(3)}, v.options());
  p.out = pointer<Real>(out), p.final_state = pointer<Real>(final_state);
  const at::Tensor forward_space = at::full({st_gated_delta::workspace_elements(p, false)}, NAN, v.options());
  p.workspace = pointer<Real>(forward_space);
  run_on_host(p, false, lanes);

  const at::Tensor grad_out = host(weight_out), grad_final = starts ? at::Tensor() : host(weight_state);
  Results results = {out, final_state, at::empty_like(q), at::empty_like(k), at::empty_like(v), at::empty_like(g),
                     at::empty_like(beta), state.defined() ? at::empty_like(state) : at::Tensor()};
  // The backward's own out and final state, written again: not the forward's.
  const at::Tensor scratch_out = at::empty_like(v), scratch_final = at::empty_like(final_state);
  p.out = pointer<Real>(scratch_out), p.final_state = pointer<Real>(scratch_final);
  p.grad_out = pointer<Real>(grad_out), p.grad_final_state = pointer<Real>(grad_final);
  p.grad_q = pointer<Real>(results[2]), p.grad_k = pointer<Real>(results[3]), p.grad_v = pointer<Real>(results[4]);
  p.grad_g = pointer<Real>(results[5]), p.grad_beta = pointer<Real>(results[6]);
  p.grad_initial_state = pointer<Real>(results[7]);
  const at::Tensor backward_space = at::full({st_gated_delta::workspace_elements(p, true)}, NAN, v.options());
  p.workspace = pointer<Real>(backward_space);
  run_on_host(p, true, lanes);
  return results;
}

// The same through libtorch's autograd: the chunked path, or the recurrent definition.
Results run_libtorch(GatedDeltaInputs in, const at::Tensor& weight_out, const at::Tensor& weight_state, int64_t chunk,
                     bool chunked) {
  std::vector<at::Tensor*> leaves = {&in.q, &in.k, &in.v, &in.g, &in.beta, &in.initial_state};
  for (at::Tensor* leaf : leaves) {
    if (leaf->defined()) *leaf = leaf->detach().clone().requires_grad_(true);
  }
  const GatedDeltaOutputs o = chunked ? gated_delta_rule_chunked(in, chunk) : gated_delta_rule_recurrent(in);
  ((o.out * weight_out.to(o.out.scalar_type())).sum() +
   (o.final_state * weight_state.to(o.final_state.scalar_type())).sum())
      .backward();
  Results results = {o.out.detach(), o.final_state.detach()};
  for (at::Tensor* leaf : leaves) results.push_back(leaf->defined() ? leaf->grad() : at::Tensor());
  return results;
}

GatedDeltaInputs random_inputs(int64_t heads, int64_t length, int64_t key_dim, int64_t value_dim, uint64_t seed,
                               bool with_state) {
  at::manual_seed(seed);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  GatedDeltaInputs in;
  const at::Tensor q = at::randn({2, heads, length, key_dim}, f64);
  const at::Tensor k = at::randn({2, heads, length, key_dim}, f64);
  in.q = q / q.norm(2, -1, true) * std::pow(static_cast<double>(key_dim), -0.5);
  in.k = k / k.norm(2, -1, true);
  in.v = at::randn({2, heads, length, value_dim}, f64);
  in.g = -at::rand({2, heads, length}, f64) * 0.5 - 0.01;  // decays exp(g) in (0.6, 0.99)
  in.beta = at::rand({2, heads, length}, f64) * 0.9 + 0.05;
  if (with_state) in.initial_state = at::randn({2, heads, key_dim, value_dim}, f64) * 0.3;
  return in;
}

// max |a - b| over max |b|.
double relative(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor judge = b.to(at::kDouble);
  return (a.to(at::kDouble) - judge).abs().max().item<double>() / std::max(judge.abs().max().item<double>(), 1e-30);
}

struct Upstream {
  at::Tensor out, state;
};

Upstream upstream_for(const GatedDeltaInputs& in) {
  return {at::randn(in.v.sizes(), at::kDouble),
          at::randn({in.q.size(0), in.q.size(1), in.q.size(3), in.v.size(3)}, at::kDouble)};
}

TEST(GatedDeltaPrograms, Float64EqualsTheRecurrenceAroundAndAcrossTheChunk) {
  // 37 value columns: two scan blocks of 32 and 5.
  for (const int64_t length : {1, 63, 64, 65, 150}) {
    for (const bool with_state : {false, true}) {
      const GatedDeltaInputs in = random_inputs(2, length, 8, 37, 100 + length, with_state);
      const Upstream up = upstream_for(in);
      const Results got = run_programs<double>(in, up.out, up.state, 64, 1);
      const Results want = run_libtorch(in, up.out, up.state, 64, false);
      for (size_t i = 0; i < got.size(); ++i) {
        if (!want[i].defined()) continue;
        EXPECT_LE(relative(got[i], want[i]), kFloat64Bound)
            << kNames[i] << ", length " << length << (with_state ? ", from a state" : "");
      }
    }
  }
}

TEST(GatedDeltaPrograms, PackedRowsEqualEachSequencesOwnRecurrence) {
  const std::vector<int64_t> starts = {0, 1, 64, 134, 150};  // 1, 63, 70 (two chunks) and 16 tokens
  GatedDeltaInputs in = random_inputs(2, 150, 8, 37, 21, false);
  const Upstream up = upstream_for(in);
  const Results got = run_programs<double>(in, up.out, up.state, 64, 1, &starts);
  std::vector<at::Tensor*> leaves = {&in.q, &in.k, &in.v, &in.g, &in.beta};
  for (at::Tensor* leaf : leaves) *leaf = leaf->detach().clone().requires_grad_(true);
  const at::Tensor out = gated_delta_rule_recurrent(in, &starts).out;
  (out * up.out).sum().backward();
  EXPECT_LE(relative(got[0], out.detach()), kFloat64Bound) << "out";
  for (size_t i = 0; i < leaves.size(); ++i) {
    EXPECT_LE(relative(got[i + 2], leaves[i]->grad()), kFloat64Bound) << kNames[i + 2];
  }
  // Not the unpacked run: the restarts matter.
  const Results whole = run_programs<double>(in, up.out, up.state, 64, 1);
  EXPECT_GT(relative(whole[0], out.detach()), 1e-3);
  const Results three = run_programs<double>(in, up.out, up.state, 64, 3, &starts);
  for (size_t i = 0; i < got.size(); ++i) {
    if (!got[i].defined() || i == 1) continue;  // no initial state; the final state is unused
    EXPECT_TRUE(at::equal(got[i], three[i])) << kNames[i] << ", 3 lanes";
  }
}

TEST(GatedDeltaPrograms, Float64EqualsTheRecurrenceInSmallChunks) {
  const GatedDeltaInputs in = random_inputs(1, 70, 4, 3, 11, true);
  const Upstream up = upstream_for(in);
  const Results got = run_programs<double>(in, up.out, up.state, 16, 1);
  const Results want = run_libtorch(in, up.out, up.state, 16, false);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(relative(got[i], want[i]), kFloat64Bound) << kNames[i];
}

TEST(GatedDeltaPrograms, Float32IsAsCloseToFloat64AsTheCpuPath) {
  const GatedDeltaInputs in = random_inputs(2, 150, 16, 40, 5, true);
  const Upstream up = upstream_for(in);
  const Results judge = run_libtorch(in, up.out, up.state, 64, false);
  GatedDeltaInputs f32 = in;
  for (at::Tensor* t : {&f32.q, &f32.k, &f32.v, &f32.g, &f32.beta, &f32.initial_state}) *t = t->to(at::kFloat);
  const Results cpu_path = run_libtorch(f32, up.out, up.state, 64, true);
  const Results programs = run_programs<float>(in, up.out, up.state, 64, 1);
  for (size_t i = 0; i < programs.size(); ++i) {
    const double peer = relative(cpu_path[i], judge[i]), ours = relative(programs[i], judge[i]);
    EXPECT_GT(peer, 0.0) << kNames[i] << ": the fp32 path cannot equal float64";
    EXPECT_LE(ours, 10 * peer) << kNames[i] << ": programs " << ours << ", libtorch fp32 " << peer;
  }
}

TEST(GatedDeltaPrograms, LanesDoNotRace) {
  const GatedDeltaInputs in = random_inputs(1, 150, 8, 37, 9, true);
  const Upstream up = upstream_for(in);
  const Results one = run_programs<float>(in, up.out, up.state, 64, 1);
  const Results three = run_programs<float>(in, up.out, up.state, 64, 3);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(at::equal(one[i], three[i])) << kNames[i];
}

}  // namespace
}  // namespace st
