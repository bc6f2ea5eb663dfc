// Kernels that pick elements by index or by mask: where, masked_fill, triu/tril, gather and
// scatter_add (index_select, embedding and their backwards). Index operands are int64: the host
// casts other index dtypes and checks every index against its dimension before launching.

// out[i] (contiguous) = c[oc] ? a[oa] : b[ob]; L.st[0] are the condition's strides.
extern "C" __global__ void KNAME(where_)(T* out, const u8* c, const T* a, const T* b, Lay L, i64 n) {
  for (i64 i = gtid(); i < n; i += gstride()) {
    i64 oc, oa, ob;
    offsets(L, i, oc, oa, ob);
    out[i] = c[oc] ? a[oa] : b[ob];
  }
}

// dst[o] = value where mask[om]; L.st[0] dst strides, L.st[1] the mask's.
extern "C" __global__ void KNAME(masked_fill_)(T* dst, const u8* mask, double sd, i64 si, Lay L, i64 n) {
  T v = Cv<T>::from(scalar_val(sd, si));
  for (i64 i = gtid(); i < n; i += gstride()) {
    i64 o, om, ox;
    offsets(L, i, o, om, ox);
    if (mask[om]) dst[o] = v;
  }
}

// out (contiguous, [.., rows, cols]) = src inside the triangle, 0 outside; L.st[1] src strides.
extern "C" __global__ void KNAME(triangle_)(T* out, const T* src, Lay L, i64 rows, i64 cols, i64 diag, int upper, i64 n) {
  for (i64 i = gtid(); i < n; i += gstride()) {
    i64 o, os, ox;
    offsets(L, i, o, os, ox);
    i64 col = i % cols, row = (i / cols) % rows;
    bool keep = upper ? (col - row >= diag) : (col - row <= diag);
    out[i] = keep ? src[os] : Cv<T>::from(0);
  }
}

// dst[o] = src[os + idx[oi] * src_dim_stride]: L over dst's shape, st[0] dst, st[1] src with
// the gathered dim's stride zeroed, st[2] index.
extern "C" __global__ void KNAME(gather_)(T* dst, const T* src, const i64* idx, Lay L, i64 src_dim_stride, i64 n) {
  for (i64 i = gtid(); i < n; i += gstride()) {
    i64 o, os, oi;
    offsets(L, i, o, os, oi);
    dst[o] = src[os + idx[oi] * src_dim_stride];
  }
}

// Atomic adds for every storage type; the 8- and 16-bit ones swap the aligned 32-bit word that
// holds them, since the hardware has no narrower atomics for all of them.
__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(int* p, int v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(i64* p, i64 v) {
  atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
__device__ __forceinline__ unsigned add_bits(f16*, unsigned bits, double v) {
  f16 h; h.x = (unsigned short)bits; return f2h(ld(h) + (float)v).x;
}
__device__ __forceinline__ unsigned add_bits(bf16*, unsigned bits, double v) {
  bf16 h; h.x = (unsigned short)bits; return f2bf(ld(h) + (float)v).x;
}
__device__ __forceinline__ unsigned add_bits(u8*, unsigned bits, double v) {
  return (unsigned)(u8)((int)bits + (int)v);
}
__device__ __forceinline__ unsigned add_bits(bool*, unsigned bits, double v) {
  return (bits != 0 || v != 0) ? 1u : 0u;
}
template <class S> __device__ void atomic_add_cas(S* p, double v) {
  unsigned long long addr = (unsigned long long)p;
  unsigned* word = (unsigned*)(addr & ~3ull);
  unsigned shift = (unsigned)(addr & 3ull) * 8u;
  unsigned mask = (sizeof(S) == 2 ? 0xffffu : 0xffu) << shift;
  unsigned old = *word, assumed;
  do {
    assumed = old;
    unsigned bits = (assumed & mask) >> shift;
    unsigned sum = (add_bits(p, bits, v) << shift) & mask;
    old = atomicCAS(word, assumed, (assumed & ~mask) | sum);
  } while (assumed != old);
}
__device__ __forceinline__ void atomic_add(f16* p, float v) { atomic_add_cas(p, (double)v); }
__device__ __forceinline__ void atomic_add(bf16* p, float v) { atomic_add_cas(p, (double)v); }
__device__ __forceinline__ void atomic_add(u8* p, int v) { atomic_add_cas(p, (double)v); }
__device__ __forceinline__ void atomic_add(bool* p, int v) { atomic_add_cas(p, (double)v); }

// dst[o + idx[oi] * dst_dim_stride] += src[os]: L over src's shape, st[0] dst with the scattered
// dim's stride zeroed, st[1] src, st[2] index.
extern "C" __global__ void KNAME(scatter_add_)(T* dst, const T* src, const i64* idx, Lay L, i64 dst_dim_stride, i64 n) {
  for (i64 i = gtid(); i < n; i += gstride()) {
    i64 o, os, oi;
    offsets(L, i, o, os, oi);
    atomic_add(dst + o + idx[oi] * dst_dim_stride, ld(src[os]));
  }
}
