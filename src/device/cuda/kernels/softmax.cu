// softmax / log_softmax along one dim of a contiguous [outer, D, inner] input (floating dtypes).
// Rows (inner == 1) get one block each; otherwise one thread per (outer, inner) column.
#if IS_FP
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

// Mean negative log-likelihood over n rows of logp (strides s0, s1), targets with stride ts.
extern "C" __global__ void KNAME(nll_)(T* out, const T* logp, const i64* tgt, i64 n, i64 c, i64 s0, i64 s1, i64 ts) {
  A s = 0;
  for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
    i64 t = tgt[i * ts];
    if (t >= 0 && t < c) s += (A)ld(logp[i * s0 + t * s1]);
  }
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] = Cv<T>::from(-s / (A)n);
}
// dx [n, c] contiguous: -g[0] / n at each row's target, 0 elsewhere.
extern "C" __global__ void KNAME(nll_bw_)(T* dx, const T* g, const i64* tgt, i64 n, i64 c, i64 ts) {
  A v = -(A)ld(g[0]) / (A)n;
  for (i64 i = gtid(); i < n * c; i += gstride()) {
    i64 row = i / c;
    dx[i] = Cv<T>::from(tgt[row * ts] == i % c ? v : (A)0);
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
