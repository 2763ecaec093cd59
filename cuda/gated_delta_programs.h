// The chunked gated delta rule (lib/model/gated_delta_rule.h) as block programs: each program is
// what one thread block runs, written as phases of `for (e = lane; e < n; e += lanes)` loops
// separated by lanes.sync(), every element written by one lane. nvcc compiles them as kernels
// (gated_delta_rule.cu); a C++ compiler runs the same code on the host, lanes as threads
// (tests/unit/model/test_gated_delta_programs.cpp), so the CPU tiers check the kernels' arithmetic
// in float64 and float32 and the cuda tier the GPU's run. Plain C++17: no CUDA header.
//
// Per chunk of L tokens (G the log decay summed from the chunk's start, gamma = exp(G),
// M_ij = exp(G_i - G_j) for j <= i, Tinv = (I + strictly-lower(beta_i k_i.k_j M_ij))^-1, as
// transformers' torch_chunk_gated_delta_rule builds it):
//   W = Tinv (beta gamma k), U = Tinv (beta v)                  (prepare_chunk)
//   C = U - W S, S' = gamma_L S + k^T exp(G_L - G) C          (scan_states, over chunks)
//   O = gamma q S + ((q k^T) . M) C                            (write_outputs)
// The backward runs prepare_chunk and scan_states again (nothing but the inputs is saved),
// carries dS back over the chunks (reverse_scan) and then takes every input's gradient chunk by
// chunk, all chunks at once (chunk_gradients).
#pragma once

#include <math.h>
#include <stdint.h>

#include <vector>

#if defined(__CUDACC__)
#define ST_PROGRAM __device__
#define ST_HOST_DEVICE __host__ __device__
#else
#define ST_PROGRAM
#define ST_HOST_DEVICE
#endif

namespace st_gated_delta {

// Inputs and outputs, contiguous, N = batch * value heads rows of T tokens.
template <typename Real>
struct Problem {
  int64_t heads = 0, length = 0, key_dim = 0, value_dim = 0, chunk = 64;  // N, T, K, V, L
  const Real *q = nullptr, *k = nullptr;   // [N, T, K]: L2-normalised, q scaled
  const Real* v = nullptr;                 // [N, T, V]
  const Real *g = nullptr, *beta = nullptr;  // [N, T]: log decay (<= 0), beta in (0, 1)
  const Real* initial_state = nullptr;     // [N, K, V]; null: zeros
  Real* out = nullptr;                     // [N, T, V]
  Real* final_state = nullptr;             // [N, K, V]
  // Backward only.
  const Real* grad_out = nullptr;          // [N, T, V]
  const Real* grad_final_state = nullptr;  // [N, K, V]; null: zeros
  Real *grad_q = nullptr, *grad_k = nullptr, *grad_v = nullptr, *grad_g = nullptr, *grad_beta = nullptr;
  Real* grad_initial_state = nullptr;      // [N, K, V]; null: not wanted
  Real* workspace = nullptr;               // workspace_elements(problem, backward) of them
  // Packed rows (several sequences one after another in each row, the same in every row): the
  // chunks' first tokens [chunks + 1] (the row's end last; no chunk crosses a sequence start) and
  // whether each chunk starts a sequence [chunks], which then starts from a zero state (its
  // gradient goes nowhere). null: every row one sequence in chunks of `chunk` tokens.
  const int64_t* chunk_first = nullptr;
  const uint8_t* chunk_opens = nullptr;
  int64_t chunks = 0;                      // with chunk_first: how many
};

// Value columns one scan block carries (the scans are independent per value column).
constexpr int64_t kValueBlock = 32;

template <typename Real>
ST_HOST_DEVICE inline int64_t chunks_of(const Problem<Real>& p) {
  return p.chunk_first ? p.chunks : (p.length + p.chunk - 1) / p.chunk;
}
template <typename Real>
ST_HOST_DEVICE inline int64_t value_blocks_of(const Problem<Real>& p) {
  return (p.value_dim + kValueBlock - 1) / kValueBlock;
}

// What the programs compute and pass on, carved from Problem::workspace.
template <typename Real>
struct Workspace {
  // Forward (and recomputed by the backward).
  Real *decay, *gamma, *to_end;        // [N, T]: G, exp(G), exp(G_last - G)
  Real *pairwise, *keys, *scores;      // [N, C, L, L]: M, k_i.k_j M (j < i), q_i.k_j M (j <= i)
  Real* inverse;                       // [N, C, L, L]: Tinv
  Real *w, *u;                         // [N, T, K], [N, T, V]
  Real* states;                        // [N, C + 1, K, V]: S at each chunk's start, then the final
  Real* corrected;                     // [N, T, V]: C
  // Backward.
  Real* grad_states;                   // [N, C + 1, K, V]: dS at each chunk's start, then d final
  Real *grad_corrected, *grad_ru;      // [N, T, V]: dC, Tinv^T dC
  Real *grad_w, *grad_rw, *state_corrected;  // [N, T, K]: dW, Tinv^T dW, dS' C
  Real *grad_scores, *grad_keys;       // [N, C, L, L]: dO.C_j (j <= i), dA (j < i)
  Real* grad_decay;                    // [N, T]: dG
  int64_t elements;                    // how many the above take
};

// The workspace's parts laid out from `base` (null: only count them).
template <typename Real>
inline Workspace<Real> bind_workspace(const Problem<Real>& p, bool backward, Real* base) {
  const int64_t tokens = p.heads * p.length, squares = p.heads * chunks_of(p) * p.chunk * p.chunk;
  const int64_t states = p.heads * (chunks_of(p) + 1) * p.key_dim * p.value_dim;
  Workspace<Real> w{};
  int64_t used = 0;
  const auto take = [&](int64_t count) {
    Real* at = base ? base + used : nullptr;
    used += count;
    return at;
  };
  w.decay = take(tokens), w.gamma = take(tokens), w.to_end = take(tokens);
  w.pairwise = take(squares), w.keys = take(squares), w.scores = take(squares), w.inverse = take(squares);
  w.w = take(tokens * p.key_dim), w.u = take(tokens * p.value_dim);
  w.states = take(states), w.corrected = take(tokens * p.value_dim);
  if (backward) {
    w.grad_states = take(states);
    w.grad_corrected = take(tokens * p.value_dim), w.grad_ru = take(tokens * p.value_dim);
    w.grad_w = take(tokens * p.key_dim), w.grad_rw = take(tokens * p.key_dim);
    w.state_corrected = take(tokens * p.key_dim);
    w.grad_scores = take(squares), w.grad_keys = take(squares);
    w.grad_decay = take(tokens);
  }
  w.elements = used;
  return w;
}

template <typename Real>
inline int64_t workspace_elements(const Problem<Real>& p, bool backward) {
  return bind_workspace<Real>(p, backward, nullptr).elements;
}

// One chunk's place: its first token's row in the [N, T] arrays, its length and its L x L square.
struct ChunkPlace {
  int64_t row, square;
  int length;
};

template <typename Real>
ST_PROGRAM inline ChunkPlace chunk_place(const Problem<Real>& p, int64_t n, int64_t c) {
  const int64_t first = p.chunk_first ? p.chunk_first[c] : c * p.chunk;
  const int64_t end = p.chunk_first ? p.chunk_first[c + 1] : first + p.chunk;
  const int64_t length = (end < p.length ? end : p.length) - first;
  return {n * p.length + first, (n * chunks_of(p) + c) * p.chunk * p.chunk, static_cast<int>(length)};
}

// Problem::chunk_first and chunk_opens of packed rows whose sequences start at `starts` (0, ...,
// then the row's length): each sequence cut into chunks of `chunk` tokens from its start.
struct ChunkTable {
  std::vector<int64_t> first;
  std::vector<uint8_t> opens;
};

inline ChunkTable chunk_table(const std::vector<int64_t>& starts, int64_t chunk) {
  ChunkTable table;
  for (size_t s = 0; s + 1 < starts.size(); ++s) {
    for (int64_t first = starts[s]; first < starts[s + 1]; first += chunk) {
      table.first.push_back(first);
      table.opens.push_back(first == starts[s] ? 1 : 0);
    }
  }
  table.first.push_back(starts.empty() ? 0 : starts.back());
  return table;
}

// Whether chunk c starts a sequence after the row's first (its state restarts from zeros).
template <typename Real>
ST_PROGRAM inline bool restarts(const Problem<Real>& p, int64_t c) {
  return c > 0 && p.chunk_opens && p.chunk_opens[c];
}

// The value columns [first, first + width) of scan block b, and the place in a [K, V] state of the
// block's e-th element (row-major over K x width).
struct ValueSlice {
  int64_t first, width;
  ST_PROGRAM int64_t state_at(int64_t e, int64_t value_dim) const {
    return (e / width) * value_dim + first + e % width;
  }
};

template <typename Real>
ST_PROGRAM inline ValueSlice value_slice(const Problem<Real>& p, int64_t b) {
  const int64_t first = b * kValueBlock;
  return {first, p.value_dim - first < kValueBlock ? p.value_dim - first : kValueBlock};
}

template <typename Real>
ST_PROGRAM inline Real dot(const Real* a, const Real* b, int64_t count) {
  Real sum = 0;
  for (int64_t x = 0; x < count; ++x) sum += a[x] * b[x];
  return sum;
}

// Block (n, c): the chunk's decays, its L x L matrices and W, U.
struct PrepareChunk {
  template <typename Real, typename Lanes>
  ST_PROGRAM static void run(const Lanes& lanes, const Problem<Real>& p, const Workspace<Real>& w, int64_t n,
                             int64_t c) {
    const ChunkPlace at = chunk_place(p, n, c);
    const int64_t K = p.key_dim, V = p.value_dim, L = p.chunk;
    const int len = at.length;
    const Real *q = p.q + at.row * K, *k = p.k + at.row * K, *v = p.v + at.row * V;
    const Real* beta = p.beta + at.row;
    Real *G = w.decay + at.row, *gamma = w.gamma + at.row, *to_end = w.to_end + at.row;
    Real *M = w.pairwise + at.square, *keys = w.keys + at.square, *scores = w.scores + at.square;
    Real* inverse = w.inverse + at.square;
    if (lanes.rank() == 0) {
      Real sum = 0;
      for (int i = 0; i < len; ++i) G[i] = sum += p.g[at.row + i];
    }
    lanes.sync();
    for (int i = lanes.rank(); i < len; i += lanes.count()) {
      gamma[i] = exp(G[i]);
      to_end[i] = exp(G[len - 1] - G[i]);
    }
    for (int e = lanes.rank(); e < len * len; e += lanes.count()) {
      const int i = e / len, j = e % len;
      const Real m = j <= i ? exp(G[i] - G[j]) : Real(0);
      M[i * L + j] = m;
      keys[i * L + j] = j < i ? dot(k + i * K, k + j * K, K) * m : Real(0);
      scores[i * L + j] = j <= i ? dot(q + i * K, k + j * K, K) * m : Real(0);
    }
    lanes.sync();
    // Column j of the unit lower triangular inverse by forward substitution, one lane per column.
    for (int j = lanes.rank(); j < len; j += lanes.count()) {
      for (int i = 0; i < len; ++i) {
        Real x = i == j ? Real(1) : Real(0);
        for (int m = j; m < i; ++m) x -= beta[i] * keys[i * L + m] * inverse[m * L + j];
        inverse[i * L + j] = i < j ? Real(0) : x;
      }
    }
    lanes.sync();
    for (int64_t e = lanes.rank(); e < len * K; e += lanes.count()) {
      const int i = static_cast<int>(e / K);
      const int64_t x = e % K;
      Real sum = 0;
      for (int j = 0; j <= i; ++j) sum += inverse[i * L + j] * (k[j * K + x] * beta[j] * gamma[j]);
      w.w[(at.row + i) * K + x] = sum;
    }
    for (int64_t e = lanes.rank(); e < len * V; e += lanes.count()) {
      const int i = static_cast<int>(e / V);
      const int64_t y = e % V;
      Real sum = 0;
      for (int j = 0; j <= i; ++j) sum += inverse[i * L + j] * (v[j * V + y] * beta[j]);
      w.u[(at.row + i) * V + y] = sum;
    }
  }
};

// Block (n, value block b): S over the chunks in order for value columns [32 b, 32 b + 32).
struct ScanStates {
  template <typename Real, typename Lanes>
  ST_PROGRAM static void run(const Lanes& lanes, const Problem<Real>& p, const Workspace<Real>& w, int64_t n,
                             int64_t b) {
    const int64_t K = p.key_dim, V = p.value_dim, C = chunks_of(p);
    const ValueSlice slice = value_slice(p, b);
    const int64_t first = slice.first, width = slice.width;
    Real* S = w.states + n * (C + 1) * K * V;
    for (int64_t e = lanes.rank(); e < K * width; e += lanes.count()) {
      const int64_t at = slice.state_at(e, V);
      S[at] = p.initial_state ? p.initial_state[n * K * V + at] : Real(0);
    }
    lanes.sync();
    for (int64_t c = 0; c < C; ++c) {
      if (restarts(p, c)) {  // the previous sequence's end state is not this one's start
        for (int64_t e = lanes.rank(); e < K * width; e += lanes.count()) S[c * K * V + slice.state_at(e, V)] = 0;
        lanes.sync();
      }
      const ChunkPlace place = chunk_place(p, n, c);
      const int len = place.length;
      const Real *S0 = S + c * K * V, *k = p.k + place.row * K, *W = w.w + place.row * K;
      const Real *U = w.u + place.row * V, *to_end = w.to_end + place.row;
      Real *S1 = S + (c + 1) * K * V, *corrected = w.corrected + place.row * V;
      for (int64_t e = lanes.rank(); e < len * width; e += lanes.count()) {
        const int64_t i = e / width, y = first + e % width;
        Real sum = U[i * V + y];
        for (int64_t x = 0; x < K; ++x) sum -= W[i * K + x] * S0[x * V + y];
        corrected[i * V + y] = sum;
      }
      lanes.sync();
      const Real decay = w.gamma[place.row + len - 1];
      for (int64_t e = lanes.rank(); e < K * width; e += lanes.count()) {
        const int64_t x = e / width, y = first + e % width;
        Real sum = decay * S0[x * V + y];
        for (int i = 0; i < len; ++i) sum += k[i * K + x] * to_end[i] * corrected[i * V + y];
        S1[x * V + y] = sum;
      }
      lanes.sync();
    }
    for (int64_t e = lanes.rank(); e < K * width; e += lanes.count()) {
      const int64_t at = slice.state_at(e, V);
      p.final_state[n * K * V + at] = S[C * K * V + at];
    }
  }
};

// Block (n, c): the chunk's outputs from its starting state and its corrected values.
struct WriteOutputs {
  template <typename Real, typename Lanes>
  ST_PROGRAM static void run(const Lanes& lanes, const Problem<Real>& p, const Workspace<Real>& w, int64_t n,
                             int64_t c) {
    const ChunkPlace at = chunk_place(p, n, c);
    const int64_t K = p.key_dim, V = p.value_dim, L = p.chunk;
    const Real* S0 = w.states + (n * (chunks_of(p) + 1) + c) * K * V;
    const Real *q = p.q + at.row * K, *scores = w.scores + at.square, *corrected = w.corrected + at.row * V;
    for (int64_t e = lanes.rank(); e < at.length * V; e += lanes.count()) {
      const int i = static_cast<int>(e / V);
      const int64_t y = e % V;
      Real from_state = 0;
      for (int64_t x = 0; x < K; ++x) from_state += q[i * K + x] * S0[x * V + y];
      Real sum = w.gamma[at.row + i] * from_state;
      for (int j = 0; j <= i; ++j) sum += scores[i * L + j] * corrected[j * V + y];
      p.out[(at.row + i) * V + y] = sum;
    }
  }
};

// Block (n, value block b): dC and dS over the chunks in reverse, from d final state.
struct ReverseScan {
  template <typename Real, typename Lanes>
  ST_PROGRAM static void run(const Lanes& lanes, const Problem<Real>& p, const Workspace<Real>& w, int64_t n,
                             int64_t b) {
    const int64_t K = p.key_dim, V = p.value_dim, L = p.chunk, C = chunks_of(p);
    const ValueSlice slice = value_slice(p, b);
    const int64_t first = slice.first, width = slice.width;
    Real* dS = w.grad_states + n * (C + 1) * K * V;
    for (int64_t e = lanes.rank(); e < K * width; e += lanes.count()) {
      const int64_t at = slice.state_at(e, V);
      dS[C * K * V + at] = p.grad_final_state ? p.grad_final_state[n * K * V + at] : Real(0);
    }
    lanes.sync();
    for (int64_t c = C - 1; c >= 0; --c) {
      if (c + 1 < C && restarts(p, c + 1)) {  // a sequence's end state feeds nothing
        for (int64_t e = lanes.rank(); e < K * width; e += lanes.count()) {
          dS[(c + 1) * K * V + slice.state_at(e, V)] = 0;
        }
        lanes.sync();
      }
      const ChunkPlace place = chunk_place(p, n, c);
      const int len = place.length;
      const Real *dS1 = dS + (c + 1) * K * V, *q = p.q + place.row * K, *k = p.k + place.row * K;
      const Real *W = w.w + place.row * K, *dO = p.grad_out + place.row * V, *scores = w.scores + place.square;
      const Real *gamma = w.gamma + place.row, *to_end = w.to_end + place.row;
      Real* dC = w.grad_corrected + place.row * V;
      for (int64_t e = lanes.rank(); e < len * width; e += lanes.count()) {
        const int i = static_cast<int>(e / width);
        const int64_t y = first + e % width;
        Real sum = 0;
        for (int m = i; m < len; ++m) sum += scores[m * L + i] * dO[m * V + y];
        Real through_state = 0;
        for (int64_t x = 0; x < K; ++x) through_state += k[i * K + x] * dS1[x * V + y];
        dC[i * V + y] = sum + to_end[i] * through_state;
      }
      lanes.sync();
      Real* dS0 = dS + c * K * V;
      for (int64_t e = lanes.rank(); e < K * width; e += lanes.count()) {
        const int64_t x = e / width, y = first + e % width;
        Real sum = gamma[len - 1] * dS1[x * V + y];
        for (int i = 0; i < len; ++i) sum += q[i * K + x] * gamma[i] * dO[i * V + y] - W[i * K + x] * dC[i * V + y];
        dS0[x * V + y] = sum;
      }
      lanes.sync();
    }
    if (!p.grad_initial_state) return;
    for (int64_t e = lanes.rank(); e < K * width; e += lanes.count()) {
      const int64_t at = slice.state_at(e, V);
      p.grad_initial_state[n * K * V + at] = dS[at];
    }
  }
};

// Block (n, c): dq, dk, dv, dg, dbeta of the chunk's tokens from its dS' (end) and dC.
struct ChunkGradients {
  template <typename Real, typename Lanes>
  ST_PROGRAM static void run(const Lanes& lanes, const Problem<Real>& p, const Workspace<Real>& w, int64_t n,
                             int64_t c) {
    const ChunkPlace at = chunk_place(p, n, c);
    const int64_t K = p.key_dim, V = p.value_dim, L = p.chunk, C = chunks_of(p);
    const int len = at.length;
    const Real* S0 = w.states + (n * (C + 1) + c) * K * V;
    const Real* dS1 = w.grad_states + (n * (C + 1) + c + 1) * K * V;
    const Real *q = p.q + at.row * K, *k = p.k + at.row * K, *v = p.v + at.row * V, *beta = p.beta + at.row;
    const Real *gamma = w.gamma + at.row, *to_end = w.to_end + at.row, *dO = p.grad_out + at.row * V;
    const Real *M = w.pairwise + at.square, *keys = w.keys + at.square, *scores = w.scores + at.square;
    const Real *inverse = w.inverse + at.square, *W = w.w + at.row * K, *U = w.u + at.row * V;
    const Real *corrected = w.corrected + at.row * V, *dC = w.grad_corrected + at.row * V;
    Real *dP = w.grad_scores + at.square, *dA = w.grad_keys + at.square;
    Real *dW = w.grad_w + at.row * K, *dRw = w.grad_rw + at.row * K, *dSC = w.state_corrected + at.row * K;
    Real *dRu = w.grad_ru + at.row * V, *dG = w.grad_decay + at.row;
    Real *dq = p.grad_q + at.row * K, *dk = p.grad_k + at.row * K, *dv = p.grad_v + at.row * V;
    // dP = dO C^T (the scores' gradient), dW = -dC S^T, dS' C, dq's part through S, and
    // dRu = Tinv^T dC (dU = dC), dv = beta dRu.
    for (int e = lanes.rank(); e < len * len; e += lanes.count()) {
      const int i = e / len, j = e % len;
      dP[i * L + j] = j <= i ? dot(dO + i * V, corrected + j * V, V) : Real(0);
    }
    for (int64_t e = lanes.rank(); e < len * K; e += lanes.count()) {
      const int64_t i = e / K, x = e % K;
      Real through_w = 0, through_end = 0, through_state = 0;
      for (int64_t y = 0; y < V; ++y) {
        through_w += dC[i * V + y] * S0[x * V + y];
        through_end += dS1[x * V + y] * corrected[i * V + y];
        through_state += S0[x * V + y] * dO[i * V + y];
      }
      dW[e] = -through_w;
      dSC[e] = through_end;
      dq[e] = gamma[i] * through_state;
    }
    for (int64_t e = lanes.rank(); e < len * V; e += lanes.count()) {
      const int i = static_cast<int>(e / V);
      const int64_t y = e % V;
      Real sum = 0;
      for (int m = i; m < len; ++m) sum += inverse[m * L + i] * dC[m * V + y];
      dRu[e] = sum;
      dv[e] = beta[i] * sum;
    }
    lanes.sync();
    for (int64_t e = lanes.rank(); e < len * K; e += lanes.count()) {
      const int i = static_cast<int>(e / K);
      const int64_t x = e % K;
      Real sum = 0;
      for (int m = i; m < len; ++m) sum += inverse[m * L + i] * dW[m * K + x];
      dRw[e] = sum;
    }
    lanes.sync();
    // dA = -(dRu U^T + dRw W^T), strictly lower: the gradient through the inverse.
    for (int e = lanes.rank(); e < len * len; e += lanes.count()) {
      const int i = e / len, j = e % len;
      dA[i * L + j] = j < i ? -(dot(dRu + i * V, U + j * V, V) + dot(dRw + i * K, W + j * K, K)) : Real(0);
    }
    lanes.sync();
    // Per token: dbeta and dG (what each of the chunk's exp(G) factors passes back).
    for (int i = lanes.rank(); i < len; i += lanes.count()) {
      const Real along_keys = dot(dRw + i * K, k + i * K, K);
      Real keys_row = 0, decay = 0;
      for (int j = 0; j < i; ++j) keys_row += dA[i * L + j] * keys[i * L + j];
      for (int j = 0; j <= i; ++j) decay += dP[i * L + j] * scores[i * L + j];
      for (int m = i; m < len; ++m) decay -= dP[m * L + i] * scores[m * L + i];
      for (int m = i + 1; m < len; ++m) decay -= beta[m] * dA[m * L + i] * keys[m * L + i];
      p.grad_beta[at.row + i] = dot(dRu + i * V, v + i * V, V) + gamma[i] * along_keys + keys_row;
      decay += dot(q + i * K, dq + i * K, K) + beta[i] * keys_row + gamma[i] * beta[i] * along_keys -
               to_end[i] * dot(k + i * K, dSC + i * K, K);
      dG[i] = decay;
    }
    lanes.sync();  // the loop above read dq's part through S, which the next one completes
    // dq, dk per element.
    for (int64_t e = lanes.rank(); e < len * K; e += lanes.count()) {
      const int i = static_cast<int>(e / K);
      const int64_t x = e % K;
      Real query = dq[e];
      for (int j = 0; j <= i; ++j) query += dP[i * L + j] * M[i * L + j] * k[j * K + x];
      Real key = to_end[i] * dSC[e] + beta[i] * gamma[i] * dRw[e];
      for (int m = i; m < len; ++m) key += dP[m * L + i] * M[m * L + i] * q[m * K + x];
      for (int j = 0; j < i; ++j) key += dA[i * L + j] * beta[i] * M[i * L + j] * k[j * K + x];
      for (int m = i + 1; m < len; ++m) key += dA[m * L + i] * beta[m] * M[m * L + i] * k[m * K + x];
      dk[e] = key;
      dq[e] = query;
    }
    lanes.sync();
    // The chunk's last G also scales S into S' and every exp(G_last - G_i); then g's gradient is
    // the reverse running sum of G's (G = cumsum g).
    if (lanes.rank() != 0) return;
    Real last = 0;
    for (int64_t e = 0; e < K * V; ++e) last += dS1[e] * S0[e];
    last *= gamma[len - 1];
    for (int i = 0; i < len; ++i) last += to_end[i] * dot(k + i * K, dSC + i * K, K);
    Real sum = last;
    for (int i = len - 1; i >= 0; --i) {
      sum += dG[i];
      p.grad_g[at.row + i] = sum;
    }
  }
};

// The forward's and the backward's programs in order; `launch(Program{}, blocks_x, blocks_y)`
// runs Program on every block (n, c) or (n, value block).
template <typename Real, typename Launch>
void run_forward(const Problem<Real>& p, const Launch& launch) {
  launch(PrepareChunk{}, p.heads, chunks_of(p));
  launch(ScanStates{}, p.heads, value_blocks_of(p));
  launch(WriteOutputs{}, p.heads, chunks_of(p));
}

template <typename Real, typename Launch>
void run_backward(const Problem<Real>& p, const Launch& launch) {
  launch(PrepareChunk{}, p.heads, chunks_of(p));
  launch(ScanStates{}, p.heads, value_blocks_of(p));
  launch(ReverseScan{}, p.heads, value_blocks_of(p));
  launch(ChunkGradients{}, p.heads, chunks_of(p));
}

}  // namespace st_gated_delta
