// torchlet CUDA kernels: shared definitions. Compiled by NVRTC once per dtype module; the module
// header before this file defines DTS (the dtype suffix), T (storage), C (compute), A (accumulator),
// SUM_T (what sum writes) and IS_FP.
#define MAXD 8
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define KNAME(base) CAT(base, DTS)
#define INFINITY __int_as_float(0x7f800000)
typedef long long i64;
typedef unsigned char u8;

struct __align__(2) f16 { unsigned short x; };
struct __align__(2) bf16 { unsigned short x; };
DECLARE_TYPES

// Half conversions through PTX, so no toolkit header is needed at run time.
__device__ __forceinline__ float ld(f16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x)); return f; }
__device__ __forceinline__ float ld(bf16 h) { return __uint_as_float(((unsigned)h.x) << 16); }
__device__ __forceinline__ float ld(float x) { return x; }
__device__ __forceinline__ double ld(double x) { return x; }
__device__ __forceinline__ i64 ld(i64 x) { return x; }
__device__ __forceinline__ int ld(int x) { return x; }
__device__ __forceinline__ int ld(u8 x) { return x; }
__device__ __forceinline__ int ld(bool x) { return x ? 1 : 0; }

__device__ __forceinline__ f16 f2h(float f) { f16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f)); return h; }
__device__ __forceinline__ bf16 f2bf(float f) { bf16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.x) : "f"(f)); return h; }

// Cv<S>::from(x): convert any compute value to storage type S, as PyTorch's casts do.
template <class S> struct Cv;
template <> struct Cv<float> { template <class X> __device__ __forceinline__ static float from(X x) { return (float)x; } };
template <> struct Cv<double> { template <class X> __device__ __forceinline__ static double from(X x) { return (double)x; } };
template <> struct Cv<f16> { template <class X> __device__ __forceinline__ static f16 from(X x) { return f2h((float)x); } };
template <> struct Cv<bf16> { template <class X> __device__ __forceinline__ static bf16 from(X x) { return f2bf((float)x); } };
template <> struct Cv<i64> { template <class X> __device__ __forceinline__ static i64 from(X x) { return (i64)x; } };
template <> struct Cv<int> { template <class X> __device__ __forceinline__ static int from(X x) { return (int)(i64)x; } };
template <> struct Cv<u8> { template <class X> __device__ __forceinline__ static u8 from(X x) { return (u8)(i64)x; } };
template <> struct Cv<bool> { template <class X> __device__ __forceinline__ static bool from(X x) { return x != 0; } };

// Up to MAXD dims; st[k] are the element strides of operand k (0: output, 1: a, 2: b); a
// broadcast dimension has stride 0.
// When every index is below 2^31 (`fast`), each size also comes with the magic number and shift
// that divide by it in 32 bits (PyTorch's IntDivider): a multiply-high and an add instead of a
// 64-bit division, which costs tens of instructions and bounded strided kernels.
struct Lay {
  int nd;
  int fast;
  i64 size[MAXD];
  i64 st[3][MAXD];
  unsigned magic[MAXD];
  unsigned shift[MAXD];
};

__device__ __forceinline__ void offsets(const Lay& L, i64 i, i64& o0, i64& o1, i64& o2) {
  o0 = 0; o1 = 0; o2 = 0;
  if (L.fast) {
    unsigned u = (unsigned)i;
    for (int d = L.nd - 1; d >= 0; d--) {
      unsigned q = (__umulhi(u, L.magic[d]) + u) >> L.shift[d];
      i64 r = (i64)(u - q * (unsigned)L.size[d]);
      u = q;
      o0 += r * L.st[0][d];
      o1 += r * L.st[1][d];
      o2 += r * L.st[2][d];
    }
    return;
  }
  for (int d = L.nd - 1; d >= 0; d--) {
    i64 s = L.size[d];
    i64 q = i % s;
    i /= s;
    o0 += q * L.st[0][d];
    o1 += q * L.st[1][d];
    o2 += q * L.st[2][d];
  }
}

__device__ __forceinline__ i64 gtid() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ i64 gstride() { return (i64)gridDim.x * blockDim.x; }

// The `fast` offsets in 32 bits, for the first NOPS operands: the host sets `fast` only when every
// index and every operand's largest offset is below 2^31.
template <int NOPS>
__device__ __forceinline__ void offsets32(const Lay& L, unsigned u, unsigned (&o)[NOPS]) {
#pragma unroll
  for (int k = 0; k < NOPS; k++) o[k] = 0;
  for (int d = L.nd - 1; d >= 0; d--) {
    unsigned q = (__umulhi(u, L.magic[d]) + u) >> L.shift[d];
    unsigned r = u - q * (unsigned)L.size[d];
    u = q;
#pragma unroll
    for (int k = 0; k < NOPS; k++) o[k] += r * (unsigned)L.st[k][d];
  }
}

// SILP, elements a thread of a strided kernel takes, is defined by the host (compile.rs
// STRIDED_ILP), which launches n / SILP threads: all are loaded before any is stored, so each
// thread keeps SILP loads in flight. Measured with Nsight Compute on the H200, a transposed copy
// doing one element a thread in 64-bit offsets kept the SMs 2.5x as busy as PyTorch's did and
// reached 0.8x its throughput; PyTorch's elementwise_kernel takes 2 to 4.

// For each element i below n: `store(o0, load(o1, o2))` with o the operands' offsets of i.
template <int NOPS, class Load, class Store>
__device__ __forceinline__ void strided_each(const Lay& L, i64 n, Load load, Store store) {
  if (L.fast) {
    unsigned base = blockIdx.x * (blockDim.x * SILP) + threadIdx.x;
    decltype(load(0u, 0u)) v[SILP];
    unsigned dst[SILP];
#pragma unroll
    for (int k = 0; k < SILP; k++) {
      unsigned i = base + k * blockDim.x;
      if (i < n) {
        unsigned o[NOPS];
        offsets32<NOPS>(L, i, o);
        dst[k] = o[0];
        v[k] = load(o[1], NOPS > 2 ? o[NOPS - 1] : 0u);
      }
    }
#pragma unroll
    for (int k = 0; k < SILP; k++) {
      if (base + k * blockDim.x < n) store(dst[k], v[k]);
    }
    return;
  }
  for (i64 i = gtid(); i < n; i += gstride()) {
    i64 o, oa, ob;
    offsets(L, i, o, oa, ob);
    store(o, load(oa, ob));
  }
}

// 16-byte (or narrower, for outputs) vectors for contiguous loads and stores.
template <class X, int N> struct alignas(sizeof(X) * N) Vec { X v[N]; };
#define VW (16 / sizeof(T))

// Pack<S>::from(v): a vector of results converted to storage type S, as Cv<S> converts each. The
// half types convert two at a time (one instruction where Cv takes two and a byte permute), as
// PyTorch's kernels do: 8 of a float16 gelu thread's ~250 instructions.
template <class S> struct Pack {
  template <int N, class X> __device__ __forceinline__ static Vec<S, N> from(const X (&v)[N]) {
    Vec<S, N> z;
#pragma unroll
    for (int k = 0; k < N; k++) z.v[k] = Cv<S>::from(v[k]);
    return z;
  }
};
#if __CUDA_ARCH__ >= 800
#define PACK_PAIRS(S, cvt)                                                                     \
  template <> struct Pack<S> {                                                                 \
    template <int N, class X> __device__ __forceinline__ static Vec<S, N> from(const X (&v)[N]) { \
      static_assert(N % 2 == 0, "half vectors hold pairs");                                    \
      Vec<unsigned, N / 2> w;                                                                  \
      _Pragma("unroll") for (int k = 0; k < N / 2; k++)                                        \
        asm(cvt " %0, %1, %2;" : "=r"(w.v[k]) : "f"((float)v[2 * k + 1]), "f"((float)v[2 * k])); \
      return *reinterpret_cast<Vec<S, N>*>(&w);                                                \
    }                                                                                          \
  };
PACK_PAIRS(f16, "cvt.rn.f16x2.f32")
PACK_PAIRS(bf16, "cvt.rn.bf16x2.f32")
#endif

// Two operands' vectors, loaded together.
template <class V> struct Two { V a, b; };

__device__ __forceinline__ C scalar_val(double d, i64 i) { return IS_FP ? (C)d : (C)i; }

#if IS_FP
// The sum of v over a block of at most 256 threads (softmax and layer norm rows), in every thread.
__device__ __forceinline__ A block_sum(A v) {
  __shared__ A s[256];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  A r = s[0];
  __syncthreads();
  return r;
}
#endif
