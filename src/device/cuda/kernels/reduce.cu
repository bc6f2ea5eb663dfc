// Reductions over any set of dims of a strided input: sum (mean through `scale`), max, min,
// argmax, argmin, and max/min with their indices. One block (or one thread, for short rows) per
// output element; when PyTorch's plan splits outputs across blocks, `splits` blocks share each
// output: each writes its partial into the staging buffer and counts itself in the semaphore of
// its column of `group` outputs, and the column's last block combines the partials, as
// PyTorch's global_reduce does.

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

template <class R> __device__ __forceinline__ Acc block_reduce(Acc a) {
  __shared__ A sv[256];
  __shared__ i64 si[256];
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

template <class R, class O>
__device__ void reduce_blocks(O* out, i64* idx, const T* in, const RLay& L, i64 M, i64 Rn, double scale, int want_index,
                              void* partial, int* sem, int splits, i64 group, int pmode) {
  __shared__ int last;
  // Balanced slices of each row: none is empty, since the plan has splits <= Rn.
  i64 r0 = (i64)blockIdx.x * Rn / splits, r1 = ((i64)blockIdx.x + 1) * Rn / splits;
  for (i64 m = blockIdx.y; m < M; m += gridDim.y) {
    i64 base = decompose(m, L.nd_out, L.out_size, L.out_st);
    Acc a = R::init();
    if (L.nd_red == 1) {
      i64 st = L.red_st[0];
      for (i64 r = r0 + threadIdx.x; r < r1; r += blockDim.x) R::merge(a, elem(in, base + r * st, r));
    } else {
      for (i64 r = r0 + threadIdx.x; r < r1; r += blockDim.x)
        R::merge(a, elem(in, base + decompose(r, L.nd_red, L.red_size, L.red_st), r));
    }
    a = block_reduce<R>(a);
    if (splits == 1) {
      if (threadIdx.x == 0) finish(out, idx, m, a, scale, want_index);
      continue;
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
        b = block_reduce<R>(b);
        if (threadIdx.x == 0) finish(out, idx, m2, b, scale, want_index);
      }
    }
    __syncthreads();
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
  extern "C" __global__ void KNAME(reduce_b_##name##_)(O* out, i64* idx, const T* in, RLay L, i64 M, i64 Rn, double scale, \
                                                      void* partial, int* sem, int splits, i64 group, int pmode) { \
    reduce_blocks<R, O>(out, idx, in, L, M, Rn, scale, want_index, partial, sem, splits, group, pmode);     \
  }                                                                                                     \
  extern "C" __global__ void KNAME(reduce_t_##name##_)(O* out, i64* idx, const T* in, RLay L, i64 M, i64 Rn, double scale) { \
    reduce_threads<R, O>(out, idx, in, L, M, Rn, scale, want_index);                                    \
  }
INST_REDUCE(sum, R_sum, SUM_T, 0)
INST_REDUCE(max, R_max, T, 0)
INST_REDUCE(min, R_min, T, 0)
INST_REDUCE(argmax, R_max, i64, 1)
INST_REDUCE(argmin, R_min, i64, 1)
