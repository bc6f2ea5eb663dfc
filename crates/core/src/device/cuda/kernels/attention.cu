// Fused attention (flash and memory-efficient SDPA) forward and backward, one thread per query row
// (per key row for dK/dV). Values, not speed: PyTorch's kernels tile; these recompute scores, which
// keeps every buffer to the ones PyTorch's kernels allocate. Operands are strided [B, H, T, D].
#if IS_FP

// Strides in elements, [b, h, t, d], of q, k, v, out, the mask ([b, h, i, j], 0 where broadcast),
// dout and the gradients; [b, h, i] of lse and delta.
struct Attn {
  i64 B, H, Hk, Tq, Tk, D, Dv;
  i64 sq[4], sk[4], sv[4], so[4], sm[4], sg[4];
  i64 sdq[4], sdk[4], sdv[4];
  i64 slse[3], sdl[3];
  int mask_kind;  // 0: none, 1: bool (false masks out), 2: added (T)
  int causal;
  double scale;
  double dropout_p;
  unsigned long long seed;
};

#define ATT_CHUNK 32

__device__ __forceinline__ A att_score(const Attn& a, const T* q, const T* k, const void* mask, i64 b, i64 h,
                                       i64 hk, i64 i, i64 j) {
  if (a.causal && j > i) return -INFINITY;
  const T* qr = q + b * a.sq[0] + h * a.sq[1] + i * a.sq[2];
  const T* kr = k + b * a.sk[0] + hk * a.sk[1] + j * a.sk[2];
  A dot = 0;
  for (i64 c = 0; c < a.D; c++) dot += (A)ld(qr[c * a.sq[3]]) * (A)ld(kr[c * a.sk[3]]);
  A s = dot * (A)a.scale;
  if (a.mask_kind) {
    i64 o = b * a.sm[0] + h * a.sm[1] + i * a.sm[2] + j * a.sm[3];
    if (a.mask_kind == 1) {
      if (!((const bool*)mask)[o]) s = -INFINITY;
    } else {
      s += (A)ld(((const T*)mask)[o]);
    }
  }
  return s;
}

__device__ __forceinline__ A att_keep(const Attn& a, i64 b, i64 h, i64 i, i64 j) {
  if (a.dropout_p <= 0.0) return (A)1;
  unsigned long long flat = (unsigned long long)(((b * a.H + h) * a.Tq + i) * a.Tk + j);
  return dropout_keep(a.seed, flat, a.dropout_p) ? (A)(1.0 / (1.0 - a.dropout_p)) : (A)0;
}

__device__ __forceinline__ A att_prob(const Attn& a, A s, A lse) {
  return (s == -INFINITY || lse == INFINITY) ? (A)0 : m_exp(s - lse);
}

extern "C" __global__ void KNAME(attn_fwd_)(Attn a, T* out, float* lse, const T* q, const T* k, const T* v,
                                            const void* mask) {
  i64 row = gtid();
  if (row >= a.B * a.H * a.Tq) return;
  i64 i = row % a.Tq, h = (row / a.Tq) % a.H, b = row / (a.Tq * a.H);
  i64 hk = h / (a.H / a.Hk);
  A mx = -INFINITY, sum = 0;
  for (i64 j = 0; j < a.Tk; j++) {
    A s = att_score(a, q, k, mask, b, h, hk, i, j);
    if (s == -INFINITY) continue;
    if (s > mx) { sum = sum * m_exp(mx - s) + (A)1; mx = s; } else { sum += m_exp(s - mx); }
  }
  A l = mx == -INFINITY ? (A)INFINITY : mx + m_log(sum);
  if (lse) lse[b * a.slse[0] + h * a.slse[1] + i * a.slse[2]] = (float)l;
  T* orow = out + b * a.so[0] + h * a.so[1] + i * a.so[2];
  for (i64 c0 = 0; c0 < a.Dv; c0 += ATT_CHUNK) {
    A acc[ATT_CHUNK];
    for (int c = 0; c < ATT_CHUNK; c++) acc[c] = 0;
    for (i64 j = 0; j < a.Tk; j++) {
      A p = att_prob(a, att_score(a, q, k, mask, b, h, hk, i, j), l) * att_keep(a, b, h, i, j);
      if (p == (A)0) continue;
      const T* vr = v + b * a.sv[0] + hk * a.sv[1] + j * a.sv[2];
      for (int c = 0; c < ATT_CHUNK && c0 + c < a.Dv; c++) acc[c] += p * (A)ld(vr[(c0 + c) * a.sv[3]]);
    }
    for (int c = 0; c < ATT_CHUNK && c0 + c < a.Dv; c++) orow[(c0 + c) * a.so[3]] = Cv<T>::from(acc[c]);
  }
}

// delta[row] = dout[row] . out[row], the fused kernels' per-row buffer (float32, laid out as lse).
extern "C" __global__ void KNAME(attn_delta_)(Attn a, float* delta, const T* dout, const T* out) {
  i64 row = gtid();
  if (row >= a.B * a.H * a.Tq) return;
  i64 i = row % a.Tq, h = (row / a.Tq) % a.H, b = row / (a.Tq * a.H);
  const T* g = dout + b * a.sg[0] + h * a.sg[1] + i * a.sg[2];
  const T* o = out + b * a.so[0] + h * a.so[1] + i * a.so[2];
  A s = 0;
  for (i64 c = 0; c < a.Dv; c++) s += (A)ld(g[c * a.sg[3]]) * (A)ld(o[c * a.so[3]]);
  delta[b * a.sdl[0] + h * a.sdl[1] + i * a.sdl[2]] = (float)s;
}

// dP[i, j] = dout[i] . v[j]
__device__ __forceinline__ A att_dp(const Attn& a, const T* dout, const T* v, i64 b, i64 h, i64 hk, i64 i, i64 j) {
  const T* g = dout + b * a.sg[0] + h * a.sg[1] + i * a.sg[2];
  const T* vr = v + b * a.sv[0] + hk * a.sv[1] + j * a.sv[2];
  A s = 0;
  for (i64 c = 0; c < a.Dv; c++) s += (A)ld(g[c * a.sg[3]]) * (A)ld(vr[c * a.sv[3]]);
  return s;
}

// dq[i] = scale * sum_j P[i, j] (keep * dP[i, j] - delta[i]) k[j].
extern "C" __global__ void KNAME(attn_dq_)(Attn a, T* dq, const T* dout, const float* lse, const float* delta,
                                           const T* q, const T* k, const T* v, const void* mask) {
  i64 row = gtid();
  if (row >= a.B * a.H * a.Tq) return;
  i64 i = row % a.Tq, h = (row / a.Tq) % a.H, b = row / (a.Tq * a.H);
  i64 hk = h / (a.H / a.Hk);
  A l = lse[b * a.slse[0] + h * a.slse[1] + i * a.slse[2]];
  A dl = delta[b * a.sdl[0] + h * a.sdl[1] + i * a.sdl[2]];
  for (i64 c0 = 0; c0 < a.D; c0 += ATT_CHUNK) {
    A acc[ATT_CHUNK];
    for (int c = 0; c < ATT_CHUNK; c++) acc[c] = 0;
    for (i64 j = 0; j < a.Tk; j++) {
      A p = att_prob(a, att_score(a, q, k, mask, b, h, hk, i, j), l);
      if (p == (A)0) continue;
      A ds = p * (att_dp(a, dout, v, b, h, hk, i, j) * att_keep(a, b, h, i, j) - dl) * (A)a.scale;
      const T* kr = k + b * a.sk[0] + hk * a.sk[1] + j * a.sk[2];
      for (int c = 0; c < ATT_CHUNK && c0 + c < a.D; c++) acc[c] += ds * (A)ld(kr[(c0 + c) * a.sk[3]]);
    }
    T* o = dq + b * a.sdq[0] + h * a.sdq[1] + i * a.sdq[2];
    for (int c = 0; c < ATT_CHUNK && c0 + c < a.D; c++) o[(c0 + c) * a.sdq[3]] = Cv<T>::from(acc[c]);
  }
}

// dk[j] = scale * sum_{h in group, i} dS[i, j] q[i]; dv[j] = sum P[i, j] keep dout[i]. One thread per
// key row.
extern "C" __global__ void KNAME(attn_dkv_)(Attn a, T* dk, T* dv, const T* dout, const float* lse,
                                            const float* delta, const T* q, const T* k, const T* v,
                                            const void* mask) {
  i64 row = gtid();
  if (row >= a.B * a.Hk * a.Tk) return;
  i64 j = row % a.Tk, hk = (row / a.Tk) % a.Hk, b = row / (a.Tk * a.Hk);
  i64 group = a.H / a.Hk;
  i64 width = a.D > a.Dv ? a.D : a.Dv;
  for (i64 c0 = 0; c0 < width; c0 += ATT_CHUNK) {
    A ak[ATT_CHUNK], av[ATT_CHUNK];
    for (int c = 0; c < ATT_CHUNK; c++) { ak[c] = 0; av[c] = 0; }
    for (i64 h = hk * group; h < (hk + 1) * group; h++) {
      for (i64 i = 0; i < a.Tq; i++) {
        A l = lse[b * a.slse[0] + h * a.slse[1] + i * a.slse[2]];
        A p = att_prob(a, att_score(a, q, k, mask, b, h, hk, i, j), l);
        if (p == (A)0) continue;
        A keep = att_keep(a, b, h, i, j);
        A ds = p * (att_dp(a, dout, v, b, h, hk, i, j) * keep - (A)delta[b * a.sdl[0] + h * a.sdl[1] + i * a.sdl[2]]) * (A)a.scale;
        const T* qr = q + b * a.sq[0] + h * a.sq[1] + i * a.sq[2];
        const T* g = dout + b * a.sg[0] + h * a.sg[1] + i * a.sg[2];
        for (int c = 0; c < ATT_CHUNK; c++) {
          if (c0 + c < a.D) ak[c] += ds * (A)ld(qr[(c0 + c) * a.sq[3]]);
          if (c0 + c < a.Dv) av[c] += p * keep * (A)ld(g[(c0 + c) * a.sg[3]]);
        }
      }
    }
    T* ko = dk + b * a.sdk[0] + hk * a.sdk[1] + j * a.sdk[2];
    T* vo = dv + b * a.sdv[0] + hk * a.sdv[1] + j * a.sdv[2];
    for (int c = 0; c < ATT_CHUNK; c++) {
      if (c0 + c < a.D) ko[(c0 + c) * a.sdk[3]] = Cv<T>::from(ak[c]);
      if (c0 + c < a.Dv) vo[(c0 + c) * a.sdv[3]] = Cv<T>::from(av[c]);
    }
  }
}

#endif
