// softmax / log_softmax along one dim of a contiguous [outer, D, inner] input (floating dtypes).
// Rows (inner == 1) that fit in registers take the row kernels below (one read, one write);
// longer rows get one block each and several passes; otherwise one thread per (outer, inner) column.
#if IS_FP
// ---- Rows held in registers, shared with layer_norm (norm.cu). A row of nvec vectors of W
// elements (W = VW when the row length and both base pointers allow 16-byte vectors, else 1) is
// spread over a group of G threads (G a power of two): thread t holds vectors t + G*k, k < NV.
// G <= 32 packs blockDim.x / G rows into each block and reduces with shuffles; G > 32 is the whole
// block (one row per block) and goes through shared memory.
struct GSum {
  __device__ __forceinline__ static A op(A a, A b) { return a + b; }
  __device__ __forceinline__ static A id() { return (A)0; }
};
// NaN wins, as in the multi-pass kernels.
struct GMax {
  __device__ __forceinline__ static A op(A a, A b) { return (b > a || isnan_(b)) ? b : a; }
  __device__ __forceinline__ static A id() { return -INFINITY; }
};

// Butterfly over `width` lanes: every lane ends with the same value (a + b == b + a bit for bit).
template <class R> __device__ __forceinline__ A warp_reduce(A v, int width) {
  for (int o = width / 2; o > 0; o >>= 1) v = R::op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Every thread of the group gets the group's total. All threads of the block must call it.
template <class R> __device__ __forceinline__ A group_reduce(A v, int G) {
  v = warp_reduce<R>(v, G < 32 ? G : 32);
  if (G <= 32) return v;
  __shared__ A part[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = lane < (G >> 5) ? part[lane] : R::id();
  v = warp_reduce<R>(v, 32);
  __syncthreads();  // part is reused by the next reduction
  return v;
}

// Where one thread's share of a row is: the rows of this block iteration, and the thread's lane.
struct RowSlot {
  i64 row;
  int t;
  bool live;
};
__device__ __forceinline__ RowSlot row_slot(i64 row0, i64 rows, int G) {
  RowSlot s;
  s.row = row0 + threadIdx.x / G;
  s.t = threadIdx.x % G;
  s.live = s.row < rows;
  return s;
}

// Loads the thread's vectors of row `x` into r; slots past the row are left unset (check
// slot_ok before using one).
template <int NV, int W>
__device__ __forceinline__ void load_row(Vec<T, W> (&r)[NV], const T* x, const RowSlot& s, int G, i64 nvec) {
#pragma unroll
  for (int k = 0; k < NV; k++) {
    i64 j = s.t + (i64)G * k;
    if (s.live && j < nvec) r[k] = reinterpret_cast<const Vec<T, W>*>(x)[j];
  }
}
__device__ __forceinline__ bool slot_ok(const RowSlot& s, int G, int k, i64 nvec) {
  return s.live && s.t + (i64)G * k < nvec;
}

template <int NV, int W>
__device__ __forceinline__ void softmax_rows(T* out, const T* in, i64 rows, i64 D, int G, int log_) {
  typedef Vec<T, W> V;
  const i64 nvec = D / W, rpb = blockDim.x / G;
  for (i64 row0 = (i64)blockIdx.x * rpb; row0 < rows; row0 += (i64)gridDim.x * rpb) {
    RowSlot s = row_slot(row0, rows, G);
    const i64 base = (s.live ? s.row : 0) * D;
    V r[NV];
    load_row<NV, W>(r, in + base, s, G, nvec);
    A mx = -INFINITY;
#pragma unroll
    for (int k = 0; k < NV; k++) {
      if (!slot_ok(s, G, k, nvec)) continue;
#pragma unroll
      for (int e = 0; e < W; e++) mx = GMax::op(mx, (A)ld(r[k].v[e]));
    }
    mx = group_reduce<GMax>(mx, G);
    // Where the element type is the accumulator's (float32, float64), softmax keeps each
    // exp(x - max) in the row's own registers, so exp runs once an element at no register cost;
    // float16 and bfloat16 compute it again for the write, since float copies of their rows
    // would cost occupancy (measured: 0.84x of PyTorch at 2^28 with copies). Dividing by the sum
    // is a multiplication by its reciprocal: the kernel is bound by instruction issue.
    const bool keep = sizeof(T) == sizeof(A) && !log_;
    A sum = 0;
#pragma unroll
    for (int k = 0; k < NV; k++) {
      if (!slot_ok(s, G, k, nvec)) continue;
#pragma unroll
      for (int e = 0; e < W; e++) {
        A ex = m_exp((A)ld(r[k].v[e]) - mx);
        sum += ex;
        if (keep) r[k].v[e] = Cv<T>::from(ex);
      }
    }
    sum = group_reduce<GSum>(sum, G);
    const A lse = m_log(sum), inv = (A)1 / sum;
#pragma unroll
    for (int k = 0; k < NV; k++) {
      if (!slot_ok(s, G, k, nvec)) continue;
      V y;
#pragma unroll
      for (int e = 0; e < W; e++) {
        A v = (A)ld(r[k].v[e]);
        y.v[e] = Cv<T>::from(keep ? v * inv : log_ ? v - mx - lse : m_exp(v - mx) * inv);
      }
      reinterpret_cast<V*>(out + base)[s.t + (i64)G * k] = y;
    }
  }
}

// Backward from registers: softmax dx = y * (g - sum(g * y)); log_softmax dx = g - exp(y) * sum(g).
template <int NV, int W>
__device__ __forceinline__ void softmax_bw_rows(T* dx, const T* g, const T* y, i64 rows, i64 D, int G, int log_) {
  typedef Vec<T, W> V;
  const i64 nvec = D / W, rpb = blockDim.x / G;
  for (i64 row0 = (i64)blockIdx.x * rpb; row0 < rows; row0 += (i64)gridDim.x * rpb) {
    RowSlot s = row_slot(row0, rows, G);
    const i64 base = (s.live ? s.row : 0) * D;
    V gr[NV], yr[NV];
    load_row<NV, W>(gr, g + base, s, G, nvec);
    load_row<NV, W>(yr, y + base, s, G, nvec);
    A sum = 0;
#pragma unroll
    for (int k = 0; k < NV; k++) {
      if (!slot_ok(s, G, k, nvec)) continue;
#pragma unroll
      for (int e = 0; e < W; e++) sum += log_ ? (A)ld(gr[k].v[e]) : (A)ld(gr[k].v[e]) * (A)ld(yr[k].v[e]);
    }
    sum = group_reduce<GSum>(sum, G);
#pragma unroll
    for (int k = 0; k < NV; k++) {
      if (!slot_ok(s, G, k, nvec)) continue;
      V d;
#pragma unroll
      for (int e = 0; e < W; e++) {
        A gv = ld(gr[k].v[e]), yv = ld(yr[k].v[e]);
        d.v[e] = Cv<T>::from(log_ ? gv - m_exp(yv) * sum : yv * (gv - sum));
      }
      reinterpret_cast<V*>(dx + base)[s.t + (i64)G * k] = d;
    }
  }
}

// softmax_rows<NV>_<dtype> takes scalar loads, softmax_rows<NV>v_<dtype> 16-byte vectors. BOUND
// is the most threads a launch gives the instance: 8 vectors a thread only ever run with a warp or
// less per row in 128-thread blocks (RowPlan), which leaves them registers enough not to spill.
#define INST_SOFTMAX_FW(nv, BOUND)                                                                     \
  extern "C" __global__ void __launch_bounds__(BOUND) KNAME(softmax_rows##nv##_)(T* out, const T* in, i64 rows, i64 D, int G, int log_) { \
    softmax_rows<nv, 1>(out, in, rows, D, G, log_);                                                    \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(BOUND) KNAME(softmax_rows##nv##v_)(T* out, const T* in, i64 rows, i64 D, int G, int log_) { \
    softmax_rows<nv, VW>(out, in, rows, D, G, log_);                                                   \
  }
// The backward holds two rows (g and y), so at most 4 vectors a thread (RowPlan's cap).
#define INST_SOFTMAX_BW(nv)                                                                            \
  extern "C" __global__ void __launch_bounds__(1024) KNAME(softmax_bw_rows##nv##_)(T* dx, const T* g, const T* y, i64 rows, i64 D, int G, int log_) { \
    softmax_bw_rows<nv, 1>(dx, g, y, rows, D, G, log_);                                                \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(1024) KNAME(softmax_bw_rows##nv##v_)(T* dx, const T* g, const T* y, i64 rows, i64 D, int G, int log_) { \
    softmax_bw_rows<nv, VW>(dx, g, y, rows, D, G, log_);                                               \
  }
INST_SOFTMAX_FW(1, 1024) INST_SOFTMAX_FW(2, 1024) INST_SOFTMAX_FW(4, 1024) INST_SOFTMAX_FW(8, 128)
INST_SOFTMAX_BW(1) INST_SOFTMAX_BW(2) INST_SOFTMAX_BW(4)

__device__ __forceinline__ A block_max(A v) {
  __shared__ A s[256];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) { A o = s[threadIdx.x + k]; if (o > s[threadIdx.x] || isnan_(o)) s[threadIdx.x] = o; }
    __syncthreads();
  }
  A r = s[0];
  __syncthreads();
  return r;
}

extern "C" __global__ void KNAME(softmax_r_)(T* out, const T* in, i64 rows, i64 D, int log_) {
  for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * D;
    T* y = out + row * D;
    A mx = -INFINITY;
    for (i64 j = threadIdx.x; j < D; j += blockDim.x) { A v = ld(x[j]); if (v > mx || isnan_(v)) mx = v; }
    mx = block_max(mx);
    A sum = 0;
    for (i64 j = threadIdx.x; j < D; j += blockDim.x) sum += m_exp((A)ld(x[j]) - mx);
    sum = block_sum(sum);
    A lse = m_log(sum);
    for (i64 j = threadIdx.x; j < D; j += blockDim.x) {
      A v = (A)ld(x[j]) - mx;
      y[j] = Cv<T>::from(log_ ? v - lse : m_exp(v) / sum);
    }
  }
}

extern "C" __global__ void KNAME(softmax_c_)(T* out, const T* in, i64 outer, i64 D, i64 inner, int log_) {
  for (i64 c = gtid(); c < outer * inner; c += gstride()) {
    i64 o = c / inner, k = c % inner;
    const T* x = in + o * D * inner + k;
    T* y = out + o * D * inner + k;
    A mx = -INFINITY;
    for (i64 j = 0; j < D; j++) { A v = ld(x[j * inner]); if (v > mx || isnan_(v)) mx = v; }
    A sum = 0;
    for (i64 j = 0; j < D; j++) sum += m_exp((A)ld(x[j * inner]) - mx);
    A lse = m_log(sum);
    for (i64 j = 0; j < D; j++) {
      A v = (A)ld(x[j * inner]) - mx;
      y[j * inner] = Cv<T>::from(log_ ? v - lse : m_exp(v) / sum);
    }
  }
}

// Backward: softmax dx = y * (g - sum(g * y)); log_softmax dx = g - exp(y) * sum(g).
extern "C" __global__ void KNAME(softmax_bw_r_)(T* dx, const T* g, const T* y, i64 rows, i64 D, int log_) {
  for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* gr = g + row * D;
    const T* yr = y + row * D;
    A s = 0;
    for (i64 j = threadIdx.x; j < D; j += blockDim.x) s += log_ ? (A)ld(gr[j]) : (A)ld(gr[j]) * (A)ld(yr[j]);
    s = block_sum(s);
    for (i64 j = threadIdx.x; j < D; j += blockDim.x) {
      A gv = ld(gr[j]), yv = ld(yr[j]);
      dx[row * D + j] = Cv<T>::from(log_ ? gv - m_exp(yv) * s : yv * (gv - s));
    }
  }
}
extern "C" __global__ void KNAME(softmax_bw_c_)(T* dx, const T* g, const T* y, i64 outer, i64 D, i64 inner, int log_) {
  for (i64 c = gtid(); c < outer * inner; c += gstride()) {
    i64 base = (c / inner) * D * inner + c % inner;
    A s = 0;
    for (i64 j = 0; j < D; j++) {
      i64 k = base + j * inner;
      s += log_ ? (A)ld(g[k]) : (A)ld(g[k]) * (A)ld(y[k]);
    }
    for (i64 j = 0; j < D; j++) {
      i64 k = base + j * inner;
      A gv = ld(g[k]), yv = ld(y[k]);
      dx[k] = Cv<T>::from(log_ ? gv - m_exp(yv) * s : yv * (gv - s));
    }
  }
}

// Mean negative log-likelihood over the n rows of logp (strides s0, s1) whose target (stride ts) is
// not `ignore`; tw[0] = the number of those rows (PyTorch's total_weight, which the backward reads).
extern "C" __global__ void KNAME(nll_)(T* out, T* tw, const T* logp, const i64* tgt, i64 n, i64 c, i64 s0, i64 s1,
                                       i64 ts, i64 ignore) {
  A s = 0, w = 0;
  for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
    i64 t = tgt[i * ts];
    if (t != ignore && t >= 0 && t < c) {
      s += (A)ld(logp[i * s0 + t * s1]);
      w += (A)1;
    }
  }
  s = block_sum(s);
  w = block_sum(w);
  if (threadIdx.x == 0) {
    out[0] = Cv<T>::from(-s / w);
    tw[0] = Cv<T>::from(w);
  }
}
// dx [n, c] contiguous: -g[0] / tw[0] at each row's target but `ignore`, 0 elsewhere.
extern "C" __global__ void KNAME(nll_bw_)(T* dx, const T* g, const T* tw, const i64* tgt, i64 n, i64 c, i64 ts,
                                          i64 ignore) {
  A v = -(A)ld(g[0]) / (A)ld(tw[0]);
  for (i64 i = gtid(); i < n * c; i += gstride()) {
    i64 t = tgt[(i / c) * ts];
    dx[i] = Cv<T>::from(t != ignore && t == i % c ? v : (A)0);
  }
}
#endif

// Counter-based random numbers (Philox4x32-10): element i depends only on (seed, offset, i), so
// any length and any launch shape give the same numbers. Uniform on [0, 1); normal by Box-Muller.
#if IS_FP
__device__ __forceinline__ uint4 philox(unsigned k0, unsigned k1, uint4 c) {
#pragma unroll
  for (int r = 0; r < 10; r++) {
    unsigned hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    unsigned hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = make_uint4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}
extern "C" __global__ void KNAME(philox_)(T* out, i64 n, unsigned long long seed, unsigned long long offset, int normal) {
  const A two_pi = (A)6.283185307179586;
  for (i64 g = gtid(); g * 4 < n; g += gstride()) {
    uint4 r = philox((unsigned)seed, (unsigned)(seed >> 32),
                     make_uint4((unsigned)g, (unsigned)((unsigned long long)g >> 32), (unsigned)offset, (unsigned)(offset >> 32)));
    unsigned w[4] = {r.x, r.y, r.z, r.w};
    A v[4];
#pragma unroll
    for (int k = 0; k < 4; k += 2) {
      A u1 = ((A)w[k] + (A)1) * (A)2.3283064365386963e-10;   // (0, 1]
      A u2 = (A)w[k + 1] * (A)2.3283064365386963e-10;        // [0, 1)
      if (normal) {
        A rad = m_sqrt((A)-2 * m_log(u1));
        v[k] = rad * m_cos(two_pi * u2);
        v[k + 1] = rad * m_sin(two_pi * u2);
      } else {
        v[k] = (A)(w[k] >> 8) * (A)5.9604644775390625e-08;     // 24 bits: [0, 1)
        v[k + 1] = (A)(w[k + 1] >> 8) * (A)5.9604644775390625e-08;
      }
    }
    i64 base = g * 4;
#pragma unroll
    for (int k = 0; k < 4; k++)
      if (base + k < n) out[base + k] = Cv<T>::from(v[k]);
  }
}
#endif
