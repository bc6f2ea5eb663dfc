// Reductions over any set of dims of a strided input: sum (mean through `scale`), prod, max, min,
// argmax, argmin, and max/min with their indices. One block (or one thread, for short rows) per
// output element; when PyTorch's plan splits outputs across blocks, `splits` blocks share each
// output: each writes its partial into the staging buffer and counts itself in the semaphore of
// its column of `group` outputs, and the column's last block combines the partials, as
// PyTorch's global_reduce does. Sums over a contiguous run take 16-byte loads; the block kernels
// are held to 64 registers so that four 256-thread blocks fit on an SM (PyTorch's plans give up to
// 4 blocks an SM: fewer resident would leave a second, partial wave).

// The kept dims map an output index to the input base offset; the reduced dims enumerate a row.
struct RLay {
  int nd_out;
  i64 out_size[MAXD];
  i64 out_st[MAXD];
  int nd_red;
  i64 red_size[MAXD];
  i64 red_st[MAXD];
};

struct Acc {
  A v;
  i64 i;
};

__device__ __forceinline__ i64 decompose(i64 idx, int nd, const i64* size, const i64* st) {
  i64 off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    i64 q = idx % size[d];
    idx /= size[d];
    off += q * st[d];
  }
  return off;
}

template <class X> struct Lim;
template <> struct Lim<float> { __device__ static float lo() { return -INFINITY; } __device__ static float hi() { return INFINITY; } };
template <> struct Lim<double> { __device__ static double lo() { return -INFINITY; } __device__ static double hi() { return INFINITY; } };
template <> struct Lim<i64> { __device__ static i64 lo() { return (i64)(-9223372036854775807LL - 1); } __device__ static i64 hi() { return 9223372036854775807LL; } };

#define NO_INDEX 9223372036854775807LL

struct R_sum {
  __device__ static Acc init() { Acc a; a.v = (A)0; a.i = NO_INDEX; return a; }
  __device__ static void merge(Acc& a, const Acc& b) { a.v += b.v; }
};
struct R_prod {
  __device__ static Acc init() { Acc a; a.v = (A)1; a.i = NO_INDEX; return a; }
  __device__ static void merge(Acc& a, const Acc& b) { a.v *= b.v; }
};
// Max and min propagate NaN, and among equal values keep the first index, as PyTorch does.
struct R_max {
  __device__ static Acc init() { Acc a; a.v = Lim<A>::lo(); a.i = NO_INDEX; return a; }
  __device__ static void merge(Acc& a, const Acc& b) {
    bool take;
    if (isnan_(a.v)) take = isnan_(b.v) && b.i < a.i;
    else if (isnan_(b.v)) take = true;
    else take = b.v > a.v || (b.v == a.v && b.i < a.i);
    if (take) a = b;
  }
};
struct R_min {
  __device__ static Acc init() { Acc a; a.v = Lim<A>::hi(); a.i = NO_INDEX; return a; }
  __device__ static void merge(Acc& a, const Acc& b) {
    bool take;
    if (isnan_(a.v)) take = isnan_(b.v) && b.i < a.i;
    else if (isnan_(b.v)) take = true;
    else take = b.v < a.v || (b.v == a.v && b.i < a.i);
    if (take) a = b;
  }
};

template <class R, int NT> __device__ __forceinline__ Acc block_reduce(Acc a) {
  __shared__ A sv[NT];
  __shared__ i64 si[NT];
  sv[threadIdx.x] = a.v;
  si[threadIdx.x] = a.i;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      Acc x; x.v = sv[threadIdx.x]; x.i = si[threadIdx.x];
      Acc y; y.v = sv[threadIdx.x + s]; y.i = si[threadIdx.x + s];
      R::merge(x, y);
      sv[threadIdx.x] = x.v;
      si[threadIdx.x] = x.i;
    }
    __syncthreads();
  }
  Acc r; r.v = sv[0]; r.i = si[0];
  __syncthreads();
  return r;
}

// What each reduction writes: the value (times scale) or, with want_index, the index into out;
// the index into idx as well when idx is given (max/min with indices).
template <class O> __device__ __forceinline__ void finish(O* out, i64* idx, i64 m, const Acc& a, double scale, int want_index) {
  if (want_index) out[m] = Cv<O>::from(a.i);
  else if (scale != 1.0) out[m] = Cv<O>::from((double)a.v * scale);
  else out[m] = Cv<O>::from(a.v);
  if (idx) idx[m] = a.i;
}

__device__ __forceinline__ Acc elem(const T* in, i64 off, i64 r) { Acc x; x.v = (A)ld(in[off]); x.i = r; return x; }

// A partial in the staging buffer is PyTorch's accumulator: 0 = the accumulator A (sums),
// 1 = the element type T (max/min values), 2 = the (value, index) pair.
__device__ __forceinline__ void put_partial(void* buf, i64 k, const Acc& a, int pmode) {
  if (pmode == 0) ((A*)buf)[k] = a.v;
  else if (pmode == 1) ((T*)buf)[k] = Cv<T>::from(a.v);
  else ((Acc*)buf)[k] = a;
}
__device__ __forceinline__ Acc get_partial(const void* buf, i64 k, int pmode) {
  Acc x;
  x.i = NO_INDEX;
  if (pmode == 0) x.v = ((const A*)buf)[k];
  else if (pmode == 1) x.v = (A)ld(((const T*)buf)[k]);
  else x = ((const Acc*)buf)[k];
  return x;
}

template <class R> struct IsSum { static const bool value = false; };
template <> struct IsSum<R_sum> { static const bool value = true; };

// The block's sum of x[r0..r1): 16-byte loads from the first aligned element on, four of them in
// flight per thread into four accumulators, scalar loads for the unaligned head and the tail.
__device__ __forceinline__ A sum_slice(const T* x, i64 r0, i64 r1) {
  typedef Vec<T, VW> V;
  A acc[4] = {(A)0, (A)0, (A)0, (A)0};
  const i64 bd = blockDim.x;
  // Elements of x + r0 past a 16-byte boundary (x itself is T-aligned).
  i64 mis = (i64)(((unsigned long long)(x + r0) / sizeof(T)) % VW);
  i64 a0 = mis ? r0 + min(r1 - r0, (i64)VW - mis) : r0;
  i64 nvec = (r1 - a0) / (i64)VW, a1 = a0 + nvec * (i64)VW;
  for (i64 r = r0 + threadIdx.x; r < a0; r += bd) acc[1] += (A)ld(x[r]);
  const V* xv = reinterpret_cast<const V*>(x + a0);
  i64 j = threadIdx.x;
  for (; j + 3 * bd < nvec; j += 4 * bd) {
    V v[4];
#pragma unroll
    for (int u = 0; u < 4; u++) v[u] = xv[j + u * bd];
#pragma unroll
    for (int u = 0; u < 4; u++)
#pragma unroll
      for (int e = 0; e < (int)VW; e++) acc[u] += (A)ld(v[u].v[e]);
  }
  for (; j < nvec; j += bd) {
    V v = xv[j];
#pragma unroll
    for (int e = 0; e < (int)VW; e++) acc[0] += (A)ld(v.v[e]);
  }
  for (i64 r = a1 + threadIdx.x; r < r1; r += bd) acc[2] += (A)ld(x[r]);
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// A block's reduction `a` of output m: written out when one block has each output; else stored
// as a partial, counted in the semaphore of its column of `group` outputs, and the column's last
// block combines the column's partials.
template <class R, class O, int NT>
__device__ __forceinline__ void settle(Acc a, O* out, i64* idx, i64 m, i64 M, double scale, int want_index,
                                       void* partial, int* sem, int splits, i64 group, int pmode) {
  __shared__ int last;
  if (splits == 1) {
    if (threadIdx.x == 0) finish(out, idx, m, a, scale, want_index);
    return;
  }
  i64 g = m / group, g0 = g * group, g1 = min(M, g0 + group);
  if (threadIdx.x == 0) {
    put_partial(partial, m * splits + blockIdx.x, a, pmode);
    __threadfence();
    last = atomicAdd(&sem[g], 1) == (int)((g1 - g0) * splits - 1);
  }
  __syncthreads();
  if (last) {
    // Every other partial of the column was written and fenced before its block counted.
    __threadfence();
    for (i64 m2 = g0; m2 < g1; m2++) {
      Acc b = R::init();
      for (int s = threadIdx.x; s < splits; s += blockDim.x) R::merge(b, get_partial(partial, m2 * splits + s, pmode));
      b = block_reduce<R, NT>(b);
      if (threadIdx.x == 0) finish(out, idx, m2, b, scale, want_index);
    }
  }
  __syncthreads();
}

template <class R, class O>
__device__ void reduce_blocks(O* out, i64* idx, const T* in, const RLay& L, i64 M, i64 Rn, double scale, int want_index,
                              void* partial, int* sem, int splits, i64 group, int pmode) {
  // Balanced slices of each row: none is empty, since the plan has splits <= Rn.
  i64 r0 = (i64)blockIdx.x * Rn / splits, r1 = ((i64)blockIdx.x + 1) * Rn / splits;
  for (i64 m = blockIdx.y; m < M; m += gridDim.y) {
    i64 base = decompose(m, L.nd_out, L.out_size, L.out_st);
    Acc a = R::init();
    if (IsSum<R>::value && L.nd_red == 1 && L.red_st[0] == 1) {
      a.v = sum_slice(in + base, r0, r1);
    } else if (L.nd_red == 1) {
      i64 st = L.red_st[0];
      for (i64 r = r0 + threadIdx.x; r < r1; r += blockDim.x) R::merge(a, elem(in, base + r * st, r));
    } else {
      for (i64 r = r0 + threadIdx.x; r < r1; r += blockDim.x)
        R::merge(a, elem(in, base + decompose(r, L.nd_red, L.red_size, L.red_st), r));
    }
    settle<R, O, 256>(block_reduce<R, 256>(a), out, idx, m, M, scale, want_index, partial, sem, splits, group, pmode);
  }
}

template <class R, class O>
__device__ void reduce_threads(O* out, i64* idx, const T* in, const RLay& L, i64 M, i64 Rn, double scale, int want_index) {
  for (i64 m = gtid(); m < M; m += gstride()) {
    i64 base = decompose(m, L.nd_out, L.out_size, L.out_st);
    Acc a = R::init();
    for (i64 r = 0; r < Rn; r++) R::merge(a, elem(in, base + decompose(r, L.nd_red, L.red_size, L.red_st), r));
    finish(out, idx, m, a, scale, want_index);
  }
}

#define INST_REDUCE(name, R, O, want_index)                                                              \
  extern "C" __global__ void __launch_bounds__(256, 4) KNAME(reduce_b_##name##_)(O* out, i64* idx, const T* in, RLay L, i64 M, i64 Rn, double scale, \
                                                      void* partial, int* sem, int splits, i64 group, int pmode) { \
    reduce_blocks<R, O>(out, idx, in, L, M, Rn, scale, want_index, partial, sem, splits, group, pmode);     \
  }                                                                                                     \
  extern "C" __global__ void KNAME(reduce_t_##name##_)(O* out, i64* idx, const T* in, RLay L, i64 M, i64 Rn, double scale) { \
    reduce_threads<R, O>(out, idx, in, L, M, Rn, scale, want_index);                                    \
  }
INST_REDUCE(sum, R_sum, SUM_T, 0)
INST_REDUCE(prod, R_prod, SUM_T, 0)
INST_REDUCE(max, R_max, T, 0)
INST_REDUCE(min, R_min, T, 0)
INST_REDUCE(argmax, R_max, i64, 1)
INST_REDUCE(argmin, R_min, i64, 1)

// Long contiguous sums take PyTorch's 512-thread blocks, held to 32 registers so that four fit
// on an SM: its plans give such sums four blocks an SM, and with 256 threads a block keeps half
// the threads PyTorch's does (Nsight Compute: latency-bound at 2^24 floats). To fit in 32
// registers without spilling, a slice is walked in 32-bit vector indices (a block's slice is
// under 2^31 vectors) and nothing but the sum is compiled in. Its loop repeats sum_slice's in
// those indices: sharing one loop template changed the machine code of both sum kernels (NVRTC,
// sm_90), a change no H200 run has measured.
__device__ __forceinline__ A sum_run32(const T* x, i64 r0, i64 r1) {
  typedef Vec<T, VW> V;
  A acc[4] = {(A)0, (A)0, (A)0, (A)0};
  const unsigned bd = blockDim.x, t = threadIdx.x;
  unsigned mis = (unsigned)(((unsigned long long)(x + r0) / sizeof(T)) % VW);
  unsigned head = mis ? (unsigned)min(r1 - r0, (i64)(VW - mis)) : 0u;
  const T* a0 = x + r0 + head;
  unsigned nvec = (unsigned)((r1 - r0 - head) / VW);
  if (t < head) acc[1] += (A)ld(x[r0 + t]);
  const V* xv = reinterpret_cast<const V*>(a0);
  unsigned j = t;
  for (; j + 3 * bd < nvec; j += 4 * bd) {
    V v[4];
#pragma unroll
    for (int u = 0; u < 4; u++) v[u] = xv[j + u * bd];
#pragma unroll
    for (int u = 0; u < 4; u++)
#pragma unroll
      for (int e = 0; e < (int)VW; e++) acc[u] += (A)ld(v[u].v[e]);
  }
  for (; j < nvec; j += bd) {
    V v = xv[j];
#pragma unroll
    for (int e = 0; e < (int)VW; e++) acc[0] += (A)ld(v.v[e]);
  }
  const T* tail = a0 + (size_t)nvec * VW;
  unsigned left = (unsigned)(x + r1 - tail);
  if (t < left) acc[2] += (A)ld(tail[t]);
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

extern "C" __global__ void __launch_bounds__(512, 4) KNAME(reduce_w_sum_)(SUM_T* out, i64* idx, const T* in, RLay L, i64 M, i64 Rn, double scale,
                                                      void* partial, int* sem, int splits, i64 group, int pmode) {
  i64 r0 = (i64)blockIdx.x * Rn / splits, r1 = ((i64)blockIdx.x + 1) * Rn / splits;
  for (i64 m = blockIdx.y; m < M; m += gridDim.y) {
    Acc a;
    a.i = NO_INDEX;
    a.v = sum_run32(in + decompose(m, L.nd_out, L.out_size, L.out_st), r0, r1);
    settle<R_sum, SUM_T, 512>(block_reduce<R_sum, 512>(a), out, idx, m, M, scale, 0, partial, sem, splits, group, pmode);
  }
}
