// Elementwise kernels: unary, binary (tensor-tensor and tensor-scalar), comparisons, casts, fill,
// arange, gather/scatter. Contiguous forms use 16-byte vectors, VPT of them a thread, with no loop
// (contig_walk.cuh); strided forms take a Lay (broadcasting = stride 0).
//
// Measured on the H200, a loop taking gelu four float32 vectors deep raised its registers to 50 (4
// blocks an SM) and lost 4-6%; for two vectors a thread see compile.rs CONTIG_VECTORS.

// ---- unary ops on compute values (the functor and instance lists come from the op table,
// device/ops, through cuda/functors.rs); integers go through double for the math functions.
#define MATH1(name, fexpr, dexpr)                                                        \
  template <class X> __device__ __forceinline__ X m_##name(X x) { return (X)dexpr((double)x); } \
  __device__ __forceinline__ float m_##name(float x) { return fexpr(x); }                 \
  __device__ __forceinline__ double m_##name(double x) { return dexpr(x); }
MATH1(exp, expf, exp)
MATH1(log, logf, log)
MATH1(sqrt, sqrtf, sqrt)
MATH1(tanh, tanhf, tanh)
MATH1(sin, sinf, sin)
MATH1(cos, cosf, cos)
MATH1(erf, erff, erf)
MATH1(erfinv, erfinvf, erfinv)
MATH1(log1p, log1pf, log1p)
MATH1(expm1, expm1f, expm1)
MATH1(floor, floorf, floor)
MATH1(ceil, ceilf, ceil)
MATH1(rint, rintf, rint)
MATH1(trunc, truncf, trunc)

template <class X> __device__ __forceinline__ X m_pow(X a, X b) { return (X)pow((double)a, (double)b); }
__device__ __forceinline__ float m_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double m_pow(double a, double b) { return pow(a, b); }
template <class X> __device__ __forceinline__ bool isnan_(X x) { return x != x; }
// The losses' helpers (smooth L1, Huber, binary cross-entropy).
template <class X> __device__ __forceinline__ X m_abs_(X x) { return x < (X)0 ? -x : x; }
template <class X> __device__ __forceinline__ X max_(X a, X b) { return (a != a || a > b) ? a : b; }

// Python's % and // (PyTorch's remainder and div_floor): the remainder takes the divisor's sign;
// an integer division by zero gives 0.
__device__ __forceinline__ float remainder_(float a, float b) { float r = fmodf(a, b); return (r != 0.f && ((r < 0.f) != (b < 0.f))) ? r + b : r; }
__device__ __forceinline__ double remainder_(double a, double b) { double r = fmod(a, b); return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r; }
template <class X> __device__ __forceinline__ X remainder_(X a, X b) {
  if (b == (X)0) return (X)0;
  X r = a % b;
  return (r != (X)0 && ((r < (X)0) != (b < (X)0))) ? (X)(r + b) : r;
}
template <class F> __device__ __forceinline__ F div_floor_f(F a, F b) {
  if (b == (F)0) return a / b;
  F mod = fmod(a, b);
  F div = (a - mod) / b;
  if (mod != (F)0 && ((b < (F)0) != (mod < (F)0))) div -= (F)1;
  if (div == (F)0) return copysign((F)0, a / b);
  F fd = floor(div);
  return (div - fd > (F)0.5) ? fd + (F)1 : fd;
}
__device__ __forceinline__ float floor_divide_(float a, float b) { return div_floor_f<float>(a, b); }
__device__ __forceinline__ double floor_divide_(double a, double b) { return div_floor_f<double>(a, b); }
template <class X> __device__ __forceinline__ X floor_divide_(X a, X b) {
  if (b == (X)0) return (X)0;
  X q = a / b;
  return ((a % b != (X)0) && ((a < (X)0) != (b < (X)0))) ? (X)(q - 1) : q;
}

#define UOP(name, expr) \
  struct U_##name { template <class X> __device__ __forceinline__ X operator()(X x, double p0, double p1) const { return expr; } };
// @UNARY_FUNCTORS@

template <class Op>
__device__ __forceinline__ void unary_contig(T* out, const T* a, i64 n, double p0, double p1) {
  typedef Vec<T, VW> V;
  contig_each(
      n, [&](auto i) { return reinterpret_cast<const V*>(a)[i]; },
      [&](auto i, V x) {
        decltype(Op()(ld(x.v[0]), p0, p1)) y[VW];
#pragma unroll
        for (int k = 0; k < (int)VW; k++) y[k] = Op()(ld(x.v[k]), p0, p1);
        reinterpret_cast<V*>(out)[i] = Pack<T>::from(y);
      },
      [&](i64 i) { out[i] = Cv<T>::from(Op()(ld(a[i]), p0, p1)); });
}

template <class Op>
__device__ __forceinline__ void unary_strided(T* out, const T* a, const Lay& L, i64 n, double p0, double p1) {
  strided_each<2>(L, n, [&](auto oa, auto) { return Cv<T>::from(Op()(ld(a[oa]), p0, p1)); },
                  [&](auto o, T v) { out[o] = v; });
}

#define INST_UNARY(name)                                                                            \
  extern "C" __global__ void KNAME(unary_c_##name##_)(T* out, const T* a, i64 n, double p0, double p1) { \
    unary_contig<U_##name>(out, a, n, p0, p1);                                                      \
  }                                                                                                 \
  extern "C" __global__ void KNAME(unary_s_##name##_)(T* out, const T* a, Lay L, i64 n, double p0, double p1) { \
    unary_strided<U_##name>(out, a, L, n, p0, p1);                                                  \
  }
// @UNARY_INSTANCES@

// ---- binary ops: (C, C) -> C for arithmetic, (C, C) -> bool for comparisons.

#define BOP(name, R, expr) \
  struct B_##name { typedef R Out; template <class X> __device__ __forceinline__ X operator()(X a, X b, double p0, double p1) const { return expr; } };
// Derivatives the backward functors use (b is the forward input).
template <class X> __device__ __forceinline__ X gelu_erf_d(X x) {
  X cdf = (X)0.5 * ((X)1 + m_erf(x * (X)0.7071067811865476));
  return cdf + x * m_exp((X)-0.5 * x * x) * (X)0.3989422804014327;
}
template <class X> __device__ __forceinline__ X gelu_tanh_d(X x) {
  X t = m_tanh((X)0.7978845608028654 * (x + (X)0.044715 * x * x * x));
  return (X)0.5 * ((X)1 + t) + (X)0.5 * x * ((X)1 - t * t) * (X)0.7978845608028654 * ((X)1 + (X)3 * (X)0.044715 * x * x);
}
template <class X> __device__ __forceinline__ X silu_d(X x) {
  X s = (X)1 / ((X)1 + m_exp(-x));
  return s * ((X)1 + x * ((X)1 - s));
}
template <class X> __device__ __forceinline__ X mish_d(X x) {
  X s = (X)1 / ((X)1 + m_exp(-x));
  X t = m_tanh(m_log1p(m_exp(x)));
  return t + x * s * ((X)1 - t * t);
}
// @BINARY_FUNCTORS@

template <class Op>
__device__ __forceinline__ void binary_contig(typename Op::Out* out, const T* a, const T* b, i64 n, double p0, double p1) {
  typedef typename Op::Out O;
  typedef Vec<T, VW> V;
  typedef Vec<O, VW> VO;
  contig_each(
      n, [&](auto i) { return Two<V>{reinterpret_cast<const V*>(a)[i], reinterpret_cast<const V*>(b)[i]}; },
      [&](auto i, Two<V> xy) {
        decltype(Op()(ld(xy.a.v[0]), ld(xy.b.v[0]), p0, p1)) z[VW];
#pragma unroll
        for (int k = 0; k < (int)VW; k++) z[k] = Op()(ld(xy.a.v[k]), ld(xy.b.v[k]), p0, p1);
        reinterpret_cast<VO*>(out)[i] = Pack<O>::from(z);
      },
      [&](i64 i) { out[i] = Cv<O>::from(Op()(ld(a[i]), ld(b[i]), p0, p1)); });
}

template <class Op>
__device__ __forceinline__ void binary_strided(typename Op::Out* out, const T* a, const T* b, const Lay& L, i64 n, double p0, double p1) {
  typedef typename Op::Out O;
  strided_each<3>(L, n, [&](auto oa, auto ob) { return Cv<O>::from(Op()(ld(a[oa]), ld(b[ob]), p0, p1)); },
                  [&](auto o, O v) { out[o] = v; });
}

// Tensor-scalar: rev != 0 computes (scalar op x), as rsub/rdiv/rpow.
template <class Op>
__device__ __forceinline__ void scalar_contig(typename Op::Out* out, const T* a, C s, int rev, i64 n) {
  typedef typename Op::Out O;
  typedef Vec<T, VW> V;
  typedef Vec<O, VW> VO;
  contig_each(
      n, [&](auto i) { return reinterpret_cast<const V*>(a)[i]; },
      [&](auto i, V x) {
        C z[VW];
#pragma unroll
        for (int k = 0; k < (int)VW; k++) {
          C v = ld(x.v[k]);
          z[k] = rev ? Op()(s, v, 0.0, 0.0) : Op()(v, s, 0.0, 0.0);
        }
        reinterpret_cast<VO*>(out)[i] = Pack<O>::from(z);
      },
      [&](i64 i) {
        C v = ld(a[i]);
        out[i] = Cv<O>::from(rev ? Op()(s, v, 0.0, 0.0) : Op()(v, s, 0.0, 0.0));
      });
}

template <class Op>
__device__ __forceinline__ void scalar_strided(typename Op::Out* out, const T* a, C s, int rev, const Lay& L, i64 n) {
  typedef typename Op::Out O;
  strided_each<2>(L, n, [&](auto oa, auto) {
        C v = ld(a[oa]);
        return Cv<O>::from(rev ? Op()(s, v, 0.0, 0.0) : Op()(v, s, 0.0, 0.0));
      },
      [&](auto o, O v) { out[o] = v; });
}

#define INST_BINARY(name)                                                                              \
  extern "C" __global__ void KNAME(binary_c_##name##_)(B_##name::Out* out, const T* a, const T* b, i64 n, double p0, double p1) { \
    binary_contig<B_##name>(out, a, b, n, p0, p1);                                                             \
  }                                                                                                    \
  extern "C" __global__ void KNAME(binary_s_##name##_)(B_##name::Out* out, const T* a, const T* b, Lay L, i64 n, double p0, double p1) { \
    binary_strided<B_##name>(out, a, b, L, n, p0, p1);                                                         \
  }                                                                                                    \
  extern "C" __global__ void KNAME(scalar_c_##name##_)(B_##name::Out* out, const T* a, double sd, i64 si, int rev, i64 n) { \
    scalar_contig<B_##name>(out, a, scalar_val(sd, si), rev, n);                                       \
  }                                                                                                    \
  extern "C" __global__ void KNAME(scalar_s_##name##_)(B_##name::Out* out, const T* a, double sd, i64 si, int rev, Lay L, i64 n) { \
    scalar_strided<B_##name>(out, a, scalar_val(sd, si), rev, L, n);                                   \
  }
// @BINARY_INSTANCES@

// ---- casts (and strided copies, as a cast to the same dtype).
// An element of T as a U. To the same dtype it is the element's bits, as PyTorch's copy keeps
// them: no float round trip that costs two conversions an element and quiets a NaN's payload.
template <class U> __device__ __forceinline__ U cast_elem(T v) { return Cv<U>::from(ld(v)); }
template <> __device__ __forceinline__ T cast_elem<T>(T v) { return v; }

#define INST_CAST(U, us)                                                                         \
  extern "C" __global__ void KNAME(cast_c_##us##_)(U* out, const T* a, i64 n) {                  \
    for (i64 i = gtid(); i < n; i += gstride()) out[i] = cast_elem<U>(a[i]);                     \
  }                                                                                              \
  extern "C" __global__ void KNAME(cast_s_##us##_)(U* out, const T* a, Lay L, i64 n) {          \
    strided_each<2>(L, n, [&](auto oa, auto) { return a[oa]; },                                  \
                    [&](auto o, T v) { out[o] = cast_elem<U>(v); });                             \
  }
INST_CAST(float, f32) INST_CAST(double, f64) INST_CAST(f16, f16) INST_CAST(bf16, bf16)
INST_CAST(i64, i64) INST_CAST(int, i32) INST_CAST(u8, u8) INST_CAST(bool, bool)

// ---- transposed copies to the same dtype: out[b][r][c] = a[b*sb + r + c*sc], the source dense
// along r. The strided copy writes a warp's 32 elements to consecutive addresses but reads them sc
// apart, a memory sector for every element. Here a block moves a 32x32 tile through shared memory:
// a warp reads 32 consecutive source elements (along r) and writes 32 consecutive output elements
// (along c). The tile holds the elements' bits, so every dtype of one size moves the same way.
// On the H200 it moved 2.9x (float32) and 3.2x (float16, bfloat16) the bytes a second of PyTorch's
// transposed copy at 2^24-2^28 elements (benches/RESULTS.md, tenth run).
// 256 threads: thread (tx, ty) = (threadIdx.x % 32, threadIdx.x / 32) moves 4 elements a phase.
template <int S> struct BitsOf;
template <> struct BitsOf<1> { typedef unsigned char t; };
template <> struct BitsOf<2> { typedef unsigned short t; };
template <> struct BitsOf<4> { typedef unsigned t; };
template <> struct BitsOf<8> { typedef unsigned long long t; };
#define TILE 32
extern "C" __global__ void __launch_bounds__(256) KNAME(transpose_)(T* out, const T* a, i64 R, i64 C, i64 sb, i64 sc, i64 tiles_c) {
  typedef typename BitsOf<sizeof(T)>::t Bits;
  __shared__ Bits tile[TILE][TILE + 1];  // +1: a warp reading a column of the tile hits 32 banks
  const Bits* src = reinterpret_cast<const Bits*>(a) + blockIdx.z * sb;
  Bits* dst = reinterpret_cast<Bits*>(out) + blockIdx.z * R * C;
  i64 r0 = (i64)blockIdx.x / tiles_c * TILE, c0 = (i64)blockIdx.x % tiles_c * TILE;
  int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
#pragma unroll
  for (int j = 0; j < TILE; j += 256 / TILE) {
    int k = j + ty;
    i64 r = r0 + tx, c = c0 + k;
    if (r < R && c < C) tile[k][tx] = src[r + c * sc];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < TILE; j += 256 / TILE) {
    int k = j + ty;
    i64 r = r0 + k, c = c0 + tx;
    if (r < R && c < C) dst[r * C + c] = tile[tx][k];
  }
}

// ---- fill, arange, gather/scatter along the last dim (cross-entropy's picks).
extern "C" __global__ void KNAME(fill_c_)(T* out, double sd, i64 si, i64 n) {
  T v = Cv<T>::from(scalar_val(sd, si));
  for (i64 i = gtid(); i < n; i += gstride()) out[i] = v;
}
extern "C" __global__ void KNAME(fill_s_)(T* out, double sd, i64 si, Lay L, i64 n) {
  T v = Cv<T>::from(scalar_val(sd, si));
  for (i64 i = gtid(); i < n; i += gstride()) {
    i64 o, oa, ob;
    offsets(L, i, o, oa, ob);
    out[o] = v;
  }
}
extern "C" __global__ void KNAME(arange_)(T* out, double start, double step, i64 n) {
  for (i64 i = gtid(); i < n; i += gstride()) out[i] = Cv<T>::from(start + step * (double)i);
}
// dst[.., idx[..], ..] = src[..] along `dim`: L.st[0] are dst strides with dim's stride zeroed
// (added back from the index), L.st[1] src strides, L.st[2] index strides.
extern "C" __global__ void KNAME(scatter_)(T* dst, const T* src, const i64* idx, Lay L, i64 dst_dim_stride, i64 dst_dim_size, i64 n) {
  for (i64 i = gtid(); i < n; i += gstride()) {
    i64 o, os, oi;
    offsets(L, i, o, os, oi);
    i64 k = idx[oi];
    if (k < 0) k += dst_dim_size;
    if (k >= 0 && k < dst_dim_size) dst[o + k * dst_dim_stride] = src[os];
  }
}
