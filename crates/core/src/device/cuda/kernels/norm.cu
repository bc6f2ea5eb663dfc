// Layer norm (forward and backward) over rows of a contiguous [rows, n] input, and dropout.
// mean/rstd are A (float, double for double); a null mean leaves the rows uncentred (RMS norm). Forward rows that fit in registers take
// layer_norm_rows; the rest one block per row with shared memory sums.
#if IS_FP

extern "C" __global__ void KNAME(layer_norm_)(T* y, A* mean, A* rstd, const T* x, const T* w,
                                              const T* b, i64 rows, i64 n, double eps) {
  for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    A s = 0;
    for (i64 j = threadIdx.x; j < n; j += blockDim.x) s += (A)ld(xr[j]);
    A mu = mean ? block_sum(s) / (A)n : (A)0;
    A q = 0;
    for (i64 j = threadIdx.x; j < n; j += blockDim.x) { A d = (A)ld(xr[j]) - mu; q += d * d; }
    A var = block_sum(q) / (A)n;
    A rs = (A)1 / m_sqrt(var + (A)eps);
    if (threadIdx.x == 0) { if (mean) mean[row] = mu; rstd[row] = rs; }
    for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
      A v = ((A)ld(xr[j]) - mu) * rs;
      if (w) v *= (A)ld(w[j]);
      if (b) v += (A)ld(b[j]);
      y[row * n + j] = Cv<T>::from(v);
    }
  }
}

// Rows that fit in registers (softmax.cu's row layout): one read of the row, the mean and then
// the squared deviations summed from registers (the same two sums as the kernel above, so the
// saved mean and rstd are computed alike), one write. w and b are read as vectors too.
template <int NV, int W>
__device__ __forceinline__ void layer_norm_rows(T* y, A* mean, A* rstd, const T* x, const T* w, const T* b,
                                                i64 rows, i64 n, double eps, int G) {
  typedef Vec<T, W> V;
  const i64 nvec = n / W, rpb = blockDim.x / G;
  for (i64 row0 = (i64)blockIdx.x * rpb; row0 < rows; row0 += (i64)gridDim.x * rpb) {
    RowSlot s = row_slot(row0, rows, G);
    const i64 base = (s.live ? s.row : 0) * n;
    V r[NV];
    load_row<NV, W>(r, x + base, s, G, nvec);
    A sum = 0;
#pragma unroll
    for (int k = 0; k < NV; k++) {
      if (!slot_ok(s, G, k, nvec)) continue;
#pragma unroll
      for (int e = 0; e < W; e++) sum += (A)ld(r[k].v[e]);
    }
    A mu = mean ? group_reduce<GSum>(sum, G) / (A)n : (A)0;
    A q = 0;
#pragma unroll
    for (int k = 0; k < NV; k++) {
      if (!slot_ok(s, G, k, nvec)) continue;
#pragma unroll
      for (int e = 0; e < W; e++) { A d = (A)ld(r[k].v[e]) - mu; q += d * d; }
    }
    A rs = (A)1 / m_sqrt(group_reduce<GSum>(q, G) / (A)n + (A)eps);
    if (s.live && s.t == 0) { if (mean) mean[s.row] = mu; rstd[s.row] = rs; }
#pragma unroll
    for (int k = 0; k < NV; k++) {
      if (!slot_ok(s, G, k, nvec)) continue;
      i64 j = s.t + (i64)G * k;
      V o, wv, bv;
      if (w) wv = reinterpret_cast<const V*>(w)[j];
      if (b) bv = reinterpret_cast<const V*>(b)[j];
#pragma unroll
      for (int e = 0; e < W; e++) {
        A v = ((A)ld(r[k].v[e]) - mu) * rs;
        if (w) v *= (A)ld(wv.v[e]);
        if (b) v += (A)ld(bv.v[e]);
        o.v[e] = Cv<T>::from(v);
      }
      reinterpret_cast<V*>(y + base)[j] = o;
    }
  }
}

// layer_norm_rows<NV>_<dtype> takes scalar loads, layer_norm_rows<NV>v_<dtype> 16-byte vectors;
// BOUND as for softmax's row kernels.
#define INST_LAYER_NORM_ROWS(nv, BOUND)                                                                        \
  extern "C" __global__ void __launch_bounds__(BOUND) KNAME(layer_norm_rows##nv##_)(T* y, A* mean, A* rstd, const T* x, const T* w, \
                                                                                  const T* b, i64 rows, i64 n, double eps, int G) { \
    layer_norm_rows<nv, 1>(y, mean, rstd, x, w, b, rows, n, eps, G);                                    \
  }                                                                                                     \
  extern "C" __global__ void __launch_bounds__(BOUND) KNAME(layer_norm_rows##nv##v_)(T* y, A* mean, A* rstd, const T* x, const T* w, \
                                                                                   const T* b, i64 rows, i64 n, double eps, int G) { \
    layer_norm_rows<nv, VW>(y, mean, rstd, x, w, b, rows, n, eps, G);                                   \
  }
INST_LAYER_NORM_ROWS(1, 1024) INST_LAYER_NORM_ROWS(2, 1024) INST_LAYER_NORM_ROWS(4, 1024) INST_LAYER_NORM_ROWS(8, 128)

// dx = rstd / n * (n * g * w - sum(g * w) - xhat * sum(g * w * xhat)) per row.
extern "C" __global__ void KNAME(layer_norm_dx_)(T* dx, const T* dy, const T* x, const A* mean,
                                                 const A* rstd, const T* w, i64 rows, i64 n) {
  for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* gr = dy + row * n;
    const T* xr = x + row * n;
    A mu = mean ? mean[row] : (A)0, rs = rstd[row];
    A s1 = 0, s2 = 0;
    for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
      A gw = (A)ld(gr[j]) * (w ? (A)ld(w[j]) : (A)1);
      s1 += gw;
      s2 += gw * ((A)ld(xr[j]) - mu) * rs;
    }
    s1 = block_sum(s1);
    s2 = block_sum(s2);
    for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
      A gw = (A)ld(gr[j]) * (w ? (A)ld(w[j]) : (A)1);
      A xh = ((A)ld(xr[j]) - mu) * rs;
      dx[row * n + j] = Cv<T>::from(((A)n * gw - (mean ? s1 : (A)0) - xh * s2) * rs / (A)n);
    }
  }
}

// dw[p, j] = sum over rows of block p of g * xhat, db[p, j] = sum of g; one thread per (p, j).
extern "C" __global__ void KNAME(layer_norm_dwb_)(T* dw, T* db, const T* dy, const T* x,
                                                  const A* mean, const A* rstd, i64 rows, i64 n,
                                                  i64 parts, i64 per_part) {
  for (i64 c = gtid(); c < parts * n; c += gstride()) {
    i64 p = c / n, j = c % n;
    i64 end = (p + 1) * per_part < rows ? (p + 1) * per_part : rows;
    A sw = 0, sb = 0;
    for (i64 r = p * per_part; r < end; r++) {
      A g = ld(dy[r * n + j]);
      sw += g * ((A)ld(x[r * n + j]) - (mean ? mean[r] : (A)0)) * rstd[r];
      sb += g;
    }
    if (dw) dw[c] = Cv<T>::from(sw);
    if (db) db[c] = Cv<T>::from(sb);
  }
}

// The same keep/drop decision as the host kernel's (a splitmix64 hash of seed and index).
__device__ __forceinline__ bool dropout_keep(unsigned long long seed, unsigned long long i, double p) {
  unsigned long long z = seed ^ (i * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 40) / 16777216.0 >= p;
}

extern "C" __global__ void KNAME(dropout_)(T* out, bool* mask, const T* x, double p,
                                           unsigned long long seed, i64 n) {
  A scale = (A)(1.0 / (1.0 - p));
  for (i64 i = gtid(); i < n; i += gstride()) {
    bool keep = dropout_keep(seed, (unsigned long long)i, p);
    mask[i] = keep;
    out[i] = Cv<T>::from(keep ? (A)ld(x[i]) * scale : (A)0);
  }
}

extern "C" __global__ void KNAME(dropout_bw_)(T* out, const T* g, const bool* mask, double scale, i64 n) {
  for (i64 i = gtid(); i < n; i += gstride()) {
    out[i] = Cv<T>::from(mask[i] ? (A)ld(g[i]) * (A)scale : (A)0);
  }
}
// Group norm over a contiguous [N, C, L] input with G groups of D = C / G channels: one block per
// (sample, group) row of D * L elements. mean and rstd [N, G] are T, as PyTorch keeps them, and
// the output is normalised with the statistics as stored.
extern "C" __global__ void KNAME(group_norm_)(T* y, T* mean, T* rstd, const T* x, const T* w, const T* b,
                                              i64 rows, i64 G, i64 D, i64 L, double eps) {
  const i64 m = D * L;
  for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * m;
    A s = 0;
    for (i64 j = threadIdx.x; j < m; j += blockDim.x) s += (A)ld(xr[j]);
    A mu = block_sum(s) / (A)m;
    A q = 0;
    for (i64 j = threadIdx.x; j < m; j += blockDim.x) { A d = (A)ld(xr[j]) - mu; q += d * d; }
    A rs = (A)1 / m_sqrt(block_sum(q) / (A)m + (A)eps);
    T mu_t = Cv<T>::from(mu), rs_t = Cv<T>::from(rs);
    if (threadIdx.x == 0) { mean[row] = mu_t; rstd[row] = rs_t; }
    mu = (A)ld(mu_t);
    rs = (A)ld(rs_t);
    const i64 c0 = (row % G) * D;
    for (i64 j = threadIdx.x; j < m; j += blockDim.x) {
      const i64 c = c0 + j / L;
      A v = ((A)ld(xr[j]) - mu) * rs;
      if (w) v *= (A)ld(w[c]);
      if (b) v += (A)ld(b[c]);
      y[row * m + j] = Cv<T>::from(v);
    }
  }
}

// dx = rstd / M * (M * g * w - sum(g * w) - xhat * sum(g * w * xhat)) per (sample, group) row.
extern "C" __global__ void KNAME(group_norm_dx_)(T* dx, const T* dy, const T* x, const T* mean, const T* rstd,
                                                 const T* w, i64 rows, i64 G, i64 D, i64 L) {
  const i64 m = D * L;
  for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
    const i64 c0 = (row % G) * D;
    const A mu = (A)ld(mean[row]), rs = (A)ld(rstd[row]);
    A s1 = 0, s2 = 0;
    for (i64 j = threadIdx.x; j < m; j += blockDim.x) {
      A gw = (A)ld(dy[row * m + j]) * (w ? (A)ld(w[c0 + j / L]) : (A)1);
      s1 += gw;
      s2 += gw * ((A)ld(x[row * m + j]) - mu) * rs;
    }
    s1 = block_sum(s1);
    s2 = block_sum(s2);
    for (i64 j = threadIdx.x; j < m; j += blockDim.x) {
      A gw = (A)ld(dy[row * m + j]) * (w ? (A)ld(w[c0 + j / L]) : (A)1);
      A xh = ((A)ld(x[row * m + j]) - mu) * rs;
      dx[row * m + j] = Cv<T>::from(((A)m * gw - s1 - xh * s2) * rs / (A)m);
    }
  }
}

// dw[c] = sum over samples and positions of g * xhat, db[c] = sum of g; one thread per channel.
extern "C" __global__ void KNAME(group_norm_dwb_)(T* dw, T* db, const T* dy, const T* x, const T* mean,
                                                  const T* rstd, i64 N, i64 C, i64 G, i64 L) {
  const i64 D = C / G;
  for (i64 c = gtid(); c < C; c += gstride()) {
    A sw = 0, sb = 0;
    for (i64 n = 0; n < N; n++) {
      const i64 r = n * G + c / D;
      const A mu = (A)ld(mean[r]), rs = (A)ld(rstd[r]);
      const i64 base = (n * C + c) * L;
      for (i64 i = 0; i < L; i++) {
        A g = (A)ld(dy[base + i]);
        sw += g * ((A)ld(x[base + i]) - mu) * rs;
        sb += g;
      }
    }
    if (dw) dw[c] = Cv<T>::from(sw);
    if (db) db[c] = Cv<T>::from(sb);
  }
}

#endif
