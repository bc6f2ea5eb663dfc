// Convolution, pooling and batch norm, forward and backward: values, not speed. One thread per
// output element (convolution), per [H, W] plane (pooling) or per channel (batch norm); the
// buffers are the ones the tensor layer allocated as PyTorch's kernels do, so memory is exact.
#if IS_FP

// A convolution over depth, height and width (a 2-D one has depth 1): input [N, C, D, H, W],
// weight [K, C/G, T, R, S], output [N, K, Do, Ho, Wo]; strides in elements of x, w, the output
// (or its gradient), and the input's and weight's gradients.
struct Cnv {
  i64 N, C, K, Cg, Kg;
  i64 in[3], ker[3], out[3];
  i64 sx[5], sw[5], so[5], sdx[5], sdw[5];
  i64 stride[3], pad[3], dil[3];
  i64 sb;
};

__device__ __forceinline__ i64 at4(const i64* s, i64 a, i64 b, i64 c, i64 d) {
  return a * s[0] + b * s[1] + c * s[2] + d * s[3];
}

__device__ __forceinline__ i64 at5(const i64* s, i64 a, i64 b, const i64* c) {
  return a * s[0] + b * s[1] + c[0] * s[2] + c[1] * s[3] + c[2] * s[4];
}

// The cell of a box of `size` at flat index e (last axis fastest).
__device__ __forceinline__ void cell(i64 e, const i64* size, i64* c) {
  c[2] = e % size[2];
  c[1] = (e / size[2]) % size[1];
  c[0] = e / (size[2] * size[1]);
}

// The input cell output o reads at tap t; false in the padding.
__device__ __forceinline__ bool reads(const Cnv& p, const i64* o, const i64* t, i64* i) {
  for (int a = 0; a < 3; a++) {
    i[a] = o[a] * p.stride[a] + t[a] * p.dil[a] - p.pad[a];
    if (i[a] < 0 || i[a] >= p.in[a]) return false;
  }
  return true;
}

// The output cell whose tap t reads input cell i; false when none does.
__device__ __forceinline__ bool read_by(const Cnv& p, const i64* i, const i64* t, i64* o) {
  for (int a = 0; a < 3; a++) {
    i64 num = i[a] + p.pad[a] - t[a] * p.dil[a];
    if (num < 0 || num % p.stride[a] || num / p.stride[a] >= p.out[a]) return false;
    o[a] = num / p.stride[a];
  }
  return true;
}

extern "C" __global__ void KNAME(conv_fwd_)(Cnv p, T* out, const T* x, const T* w, const T* bias) {
  i64 cells = p.out[0] * p.out[1] * p.out[2], taps = p.ker[0] * p.ker[1] * p.ker[2];
  i64 e = gtid();
  if (e >= p.N * p.K * cells) return;
  i64 o[3], t[3], i[3];
  cell(e % cells, p.out, o);
  i64 k = (e / cells) % p.K, n = e / (cells * p.K);
  i64 first = k / p.Kg * p.Cg;
  A acc = bias ? (A)ld(bias[k * p.sb]) : (A)0;
  for (i64 c = 0; c < p.Cg; c++)
    for (i64 f = 0; f < taps; f++) {
      cell(f, p.ker, t);
      if (reads(p, o, t, i)) acc += (A)ld(x[at5(p.sx, n, first + c, i)]) * (A)ld(w[at5(p.sw, k, c, t)]);
    }
  out[at5(p.so, n, k, o)] = Cv<T>::from(acc);
}

extern "C" __global__ void KNAME(conv_dx_)(Cnv p, T* dx, const T* dout, const T* w) {
  i64 cells = p.in[0] * p.in[1] * p.in[2], taps = p.ker[0] * p.ker[1] * p.ker[2];
  i64 e = gtid();
  if (e >= p.N * p.C * cells) return;
  i64 i[3], t[3], o[3];
  cell(e % cells, p.in, i);
  i64 ch = (e / cells) % p.C, n = e / (cells * p.C);
  i64 g = ch / p.Cg, c = ch % p.Cg;
  A acc = 0;
  for (i64 f = 0; f < taps; f++) {
    cell(f, p.ker, t);
    if (!read_by(p, i, t, o)) continue;
    for (i64 k = g * p.Kg; k < (g + 1) * p.Kg; k++)
      acc += (A)ld(dout[at5(p.so, n, k, o)]) * (A)ld(w[at5(p.sw, k, c, t)]);
  }
  dx[at5(p.sdx, n, ch, i)] = Cv<T>::from(acc);
}

extern "C" __global__ void KNAME(conv_dw_)(Cnv p, T* dw, const T* dout, const T* x) {
  i64 taps = p.ker[0] * p.ker[1] * p.ker[2], cells = p.out[0] * p.out[1] * p.out[2];
  i64 e = gtid();
  if (e >= p.K * p.Cg * taps) return;
  i64 t[3], o[3], i[3];
  cell(e % taps, p.ker, t);
  i64 c = (e / taps) % p.Cg, k = e / (taps * p.Cg);
  i64 ch = k / p.Kg * p.Cg + c;
  A acc = 0;
  for (i64 n = 0; n < p.N; n++)
    for (i64 f = 0; f < cells; f++) {
      cell(f, p.out, o);
      if (reads(p, o, t, i)) acc += (A)ld(dout[at5(p.so, n, k, o)]) * (A)ld(x[at5(p.sx, n, ch, i)]);
    }
  dw[at5(p.sdw, k, c, t)] = Cv<T>::from(acc);
}

// A 2-D pooling of input [N, C, H, W] into [N, C, Ho, Wo]. kind: 0 max, 1 average, 2 adaptive
// average; strides of x, the output (or its gradient), the indices and the input's gradient.
struct Pl {
  i64 N, C, H, W, Ho, Wo;
  i64 sx[4], so[4], si[4], sdx[4];
  i64 kernel[2], stride[2], pad[2], dil[2];
  int kind, count_include_pad;
  i64 divisor;  // 0: none
};

// The window of output cell o along one axis: [lo, hi) before clipping, with tap spacing step.
__device__ __forceinline__ void pl_span(const Pl& p, int axis, i64 o, i64 size, i64 outs, i64& lo, i64& hi,
                                        i64& step) {
  if (p.kind == 2) {
    lo = o * size / outs;
    hi = ((o + 1) * size + outs - 1) / outs;
    step = 1;
    return;
  }
  lo = o * p.stride[axis] - p.pad[axis];
  hi = lo + (p.kernel[axis] - 1) * p.dil[axis] + 1;
  step = p.dil[axis];
}

__device__ __forceinline__ A pl_divisor(const Pl& p, i64 hl, i64 hh, i64 wl, i64 wh) {
  if (p.kind == 1 && p.divisor) return (A)p.divisor;
  if (p.kind == 1 && p.count_include_pad)
    return (A)((min(hh, p.H + p.pad[0]) - hl) * (min(wh, p.W + p.pad[1]) - wl));
  return (A)((min(hh, p.H) - max(hl, (i64)0)) * (min(wh, p.W) - max(wl, (i64)0)));
}

extern "C" __global__ void KNAME(pool_fwd_)(Pl p, T* out, i64* idx, const T* x) {
  i64 e = gtid();
  if (e >= p.N * p.C * p.Ho * p.Wo) return;
  i64 ow = e % p.Wo, oh = (e / p.Wo) % p.Ho, c = (e / (p.Wo * p.Ho)) % p.C, n = e / (p.Wo * p.Ho * p.C);
  i64 hl, hh, hs, wl, wh, ws;
  pl_span(p, 0, oh, p.H, p.Ho, hl, hh, hs);
  pl_span(p, 1, ow, p.W, p.Wo, wl, wh, ws);
  A best = -INFINITY, sum = 0;
  i64 arg = -1;
  for (i64 ih = hl; ih < hh; ih += hs) {
    if (ih < 0 || ih >= p.H) continue;
    for (i64 iw = wl; iw < wh; iw += ws) {
      if (iw < 0 || iw >= p.W) continue;
      A v = (A)ld(x[at4(p.sx, n, c, ih, iw)]);
      sum += v;
      if (arg < 0 || v > best || v != v) { best = v; arg = ih * p.W + iw; }
    }
  }
  if (p.kind == 0) {
    out[at4(p.so, n, c, oh, ow)] = Cv<T>::from(best);
    if (idx) idx[at4(p.si, n, c, oh, ow)] = arg < 0 ? 0 : arg;
  } else {
    out[at4(p.so, n, c, oh, ow)] = Cv<T>::from(sum / pl_divisor(p, hl, hh, wl, wh));
  }
}

// One thread per [H, W] plane: zero its gradient, then add each output's share.
extern "C" __global__ void KNAME(pool_bwd_)(Pl p, T* dx, const T* dout, const i64* idx) {
  i64 plane = gtid();
  if (plane >= p.N * p.C) return;
  i64 n = plane / p.C, c = plane % p.C;
  for (i64 i = 0; i < p.H * p.W; i++) dx[at4(p.sdx, n, c, i / p.W, i % p.W)] = Cv<T>::from((A)0);
  for (i64 oh = 0; oh < p.Ho; oh++)
    for (i64 ow = 0; ow < p.Wo; ow++) {
      A g = (A)ld(dout[at4(p.so, n, c, oh, ow)]);
      if (idx) {
        i64 i = idx[at4(p.si, n, c, oh, ow)];
        T* d = &dx[at4(p.sdx, n, c, i / p.W, i % p.W)];
        *d = Cv<T>::from((A)ld(*d) + g);
        continue;
      }
      i64 hl, hh, hs, wl, wh, ws;
      pl_span(p, 0, oh, p.H, p.Ho, hl, hh, hs);
      pl_span(p, 1, ow, p.W, p.Wo, wl, wh, ws);
      A share = g / pl_divisor(p, hl, hh, wl, wh);
      for (i64 ih = max(hl, (i64)0); ih < min(hh, p.H); ih++)
        for (i64 iw = max(wl, (i64)0); iw < min(wh, p.W); iw++) {
          T* d = &dx[at4(p.sdx, n, c, ih, iw)];
          *d = Cv<T>::from((A)ld(*d) + share);
        }
    }
}

// Batch norm of x [N, C, L] over N and L, one thread per channel; strides of x, y (or dy), dx.
// The weight, bias and running statistics are float32 (pf) or of x's dtype, as PyTorch allows.
struct Bn {
  i64 N, C, L;
  i64 sx[3], sy[3], sdx[3];
  double eps, momentum;
  int training, running, pf;
};

__device__ __forceinline__ i64 at3(const i64* s, i64 a, i64 b, i64 c) { return a * s[0] + b * s[1] + c * s[2]; }

__device__ __forceinline__ double bn_ld(const Bn& p, const void* v, i64 c) {
  return p.pf ? (double)((const float*)v)[c] : (double)ld(((const T*)v)[c]);
}

__device__ __forceinline__ void bn_st(const Bn& p, void* v, i64 c, double x) {
  if (p.pf) ((float*)v)[c] = (float)x; else ((T*)v)[c] = Cv<T>::from(x);
}

extern "C" __global__ void KNAME(bn_fwd_)(Bn p, T* y, float* mean, float* invstd, void* rmean, void* rvar,
                                          const T* x, const void* w, const void* b) {
  i64 c = gtid();
  if (c >= p.C) return;
  double count = (double)(p.N * p.L), mu, inv;
  if (p.training) {
    double s = 0, q = 0;
    for (i64 n = 0; n < p.N; n++)
      for (i64 l = 0; l < p.L; l++) s += (double)ld(x[at3(p.sx, n, c, l)]);
    mu = s / count;
    for (i64 n = 0; n < p.N; n++)
      for (i64 l = 0; l < p.L; l++) {
        double d = (double)ld(x[at3(p.sx, n, c, l)]) - mu;
        q += d * d;
      }
    double var = q / count;
    inv = 1.0 / sqrt(var + p.eps);
    mean[c] = (float)mu;
    invstd[c] = (float)inv;
    if (p.running) {
      double unbiased = count > 1 ? var * count / (count - 1) : var;
      bn_st(p, rmean, c, (1 - p.momentum) * bn_ld(p, rmean, c) + p.momentum * mu);
      bn_st(p, rvar, c, (1 - p.momentum) * bn_ld(p, rvar, c) + p.momentum * unbiased);
    }
  } else {
    mu = bn_ld(p, rmean, c);
    inv = 1.0 / sqrt(bn_ld(p, rvar, c) + p.eps);
  }
  double wc = w ? bn_ld(p, w, c) : 1.0, bc = b ? bn_ld(p, b, c) : 0.0;
  for (i64 n = 0; n < p.N; n++)
    for (i64 l = 0; l < p.L; l++)
      y[at3(p.sy, n, c, l)] = Cv<T>::from(((double)ld(x[at3(p.sx, n, c, l)]) - mu) * inv * wc + bc);
}

extern "C" __global__ void KNAME(bn_bwd_)(Bn p, T* dx, void* dw, void* db, const float* mean, const float* invstd,
                                          const void* rmean, const void* rvar, const T* x, const void* w,
                                          const T* dy) {
  i64 c = gtid();
  if (c >= p.C) return;
  double count = (double)(p.N * p.L);
  double mu = p.training ? (double)mean[c] : bn_ld(p, rmean, c);
  double inv = p.training ? (double)invstd[c] : 1.0 / sqrt(bn_ld(p, rvar, c) + p.eps);
  double wc = w ? bn_ld(p, w, c) : 1.0, sdy = 0, sdyx = 0;
  for (i64 n = 0; n < p.N; n++)
    for (i64 l = 0; l < p.L; l++) {
      double g = (double)ld(dy[at3(p.sy, n, c, l)]);
      sdy += g;
      sdyx += g * ((double)ld(x[at3(p.sx, n, c, l)]) - mu) * inv;
    }
  if (dx)
    for (i64 n = 0; n < p.N; n++)
      for (i64 l = 0; l < p.L; l++) {
        double g = (double)ld(dy[at3(p.sy, n, c, l)]);
        double xh = ((double)ld(x[at3(p.sx, n, c, l)]) - mu) * inv;
        double v = p.training ? (g - sdy / count - xh * sdyx / count) * inv * wc : g * inv * wc;
        dx[at3(p.sdx, n, c, l)] = Cv<T>::from(v);
      }
  if (dw) bn_st(p, dw, c, sdyx);
  if (db) bn_st(p, db, c, sdy);
}

// 2-D resizing of [N, C, H, W] into [N, C, Ho, Wo]. mode: 0 nearest, 1 bilinear, 2 bilinear with
// align_corners; ratio per axis as PyTorch's kernels index with (f32, as they compute). The
// backward gathers, for each input element, the outputs that read it (the host kernel's sums).
struct Up {
  i64 N, C, H, W, Ho, Wo;
  i64 sx[4], so[4];
  float ratio[2];
  int mode;
};

struct Taps {
  i64 i0, i1;
  float w0, w1;
};

__device__ __forceinline__ Taps up_taps(const Up& p, i64 o, i64 in, float r) {
  Taps t;
  if (p.mode == 0) {
    i64 i = (i64)floorf((float)o * r);
    t.i0 = t.i1 = i < in - 1 ? i : in - 1;
    t.w0 = 1.0f;
    t.w1 = 0.0f;
    return t;
  }
  float src = p.mode == 2 ? r * (float)o : r * ((float)o + 0.5f) - 0.5f;
  if (src < 0.0f) src = 0.0f;
  t.i0 = (i64)src;
  t.i1 = t.i0 + (t.i0 < in - 1 ? 1 : 0);
  t.w1 = src - (float)t.i0;
  t.w0 = 1.0f - t.w1;
  return t;
}

__device__ __forceinline__ float up_weight(const Up& p, i64 o, i64 i, i64 in, float r) {
  Taps t = up_taps(p, o, in, r);
  return (t.i0 == i ? t.w0 : 0.0f) + (t.i1 == i ? t.w1 : 0.0f);
}

// The outputs along one axis that may read input i (a superset; up_taps decides).
__device__ __forceinline__ void up_readers(i64 i, i64 outs, float r, i64& lo, i64& hi) {
  if (r <= 0.0f) { lo = 0; hi = outs; return; }
  lo = (i64)floorf(((float)i - 1.0f) / r) - 2;
  hi = (i64)ceilf(((float)i + 2.0f) / r) + 2;
  if (lo < 0) lo = 0;
  if (hi > outs) hi = outs;
}

extern "C" __global__ void KNAME(upsample_fwd_)(Up p, T* out, const T* x) {
  for (i64 e = gtid(); e < p.N * p.C * p.Ho * p.Wo; e += gstride()) {
    i64 ow = e % p.Wo, oh = (e / p.Wo) % p.Ho, c = (e / (p.Wo * p.Ho)) % p.C, n = e / (p.Wo * p.Ho * p.C);
    Taps th = up_taps(p, oh, p.H, p.ratio[0]), tw = up_taps(p, ow, p.W, p.ratio[1]);
    A v;
    if (p.mode == 0) {
      v = (A)ld(x[at4(p.sx, n, c, th.i0, tw.i0)]);
    } else {
      A a = (A)ld(x[at4(p.sx, n, c, th.i0, tw.i0)]), b = (A)ld(x[at4(p.sx, n, c, th.i0, tw.i1)]);
      A d = (A)ld(x[at4(p.sx, n, c, th.i1, tw.i0)]), f = (A)ld(x[at4(p.sx, n, c, th.i1, tw.i1)]);
      v = (A)th.w0 * ((A)tw.w0 * a + (A)tw.w1 * b) + (A)th.w1 * ((A)tw.w0 * d + (A)tw.w1 * f);
    }
    out[at4(p.so, n, c, oh, ow)] = Cv<T>::from(v);
  }
}

// p.sx: the input gradient's strides; p.so: the output gradient's.
extern "C" __global__ void KNAME(upsample_bwd_)(Up p, T* dx, const T* dout) {
  for (i64 e = gtid(); e < p.N * p.C * p.H * p.W; e += gstride()) {
    i64 iw = e % p.W, ih = (e / p.W) % p.H, c = (e / (p.W * p.H)) % p.C, n = e / (p.W * p.H * p.C);
    i64 hl, hh, wl, wh;
    up_readers(ih, p.Ho, p.ratio[0], hl, hh);
    up_readers(iw, p.Wo, p.ratio[1], wl, wh);
    A sum = 0;
    for (i64 oh = hl; oh < hh; oh++) {
      float a = up_weight(p, oh, ih, p.H, p.ratio[0]);
      if (a == 0.0f) continue;
      for (i64 ow = wl; ow < wh; ow++) {
        float b = up_weight(p, ow, iw, p.W, p.ratio[1]);
        if (b == 0.0f) continue;
        sum += (A)a * (A)b * (A)ld(dout[at4(p.so, n, c, oh, ow)]);
      }
    }
    dx[at4(p.sx, n, c, ih, iw)] = Cv<T>::from(sum);
  }
}

#endif
