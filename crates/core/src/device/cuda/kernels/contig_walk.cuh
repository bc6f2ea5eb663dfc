// The contiguous kernels' walk over n elements: 16-byte vectors, VPT a thread, CBLOCK threads a
// block, no loop. Kept apart from prelude.cuh so tests/gpu/contig_walk.cpp can check it on the host.

// Vectors each thread takes: WIDE_VPT of 4- and 8-byte types, one of 1- and 2-byte types (the host
// defines WIDE_VPT and CBLOCK, the block size, from compile.rs).
#define VPT ((int)VW >= 8 ? 1 : WIDE_VPT)

// This block's share of the n / VW whole 16-byte vectors: `store(i, load(i))` for each, where load
// reads the operands and store computes and writes. Block b takes the CBLOCK * VPT vectors from
// b * CBLOCK * VPT; thread t the ones at t, t + CBLOCK, ... (coalesced), all loaded before any is
// stored, so the loads are in flight together even when out aliases an input. The block whose
// share is partial then runs `tail(i)` for the elements past the last whole vector (fewer than VW):
// the host launches ceil(n / (VW * VPT * CBLOCK)) blocks (ops.rs run_contig), so only the last
// block's share can be partial, and the tail always falls in a partial share. A whole share
// returns straight after its stores, with no test for the tail on the path every other block takes.
static_assert(CBLOCK >= 16, "a thread for each element of the tail, up to 15 one-byte ones");
template <class I, class Load, class Store, class Tail>
__device__ __forceinline__ void chunk_vectors(I n, Load load, Store store, Tail tail) {
  const I nv = n / (I)VW;  // VW is a size_t, which would make every index 64-bit
  const I first = (I)blockIdx.x * (CBLOCK * VPT);
  const I base = first + threadIdx.x;
  typedef decltype(load(base)) R;
  R r[VPT];
  if (first + CBLOCK * VPT <= nv) {
#pragma unroll
    for (int k = 0; k < VPT; k++) r[k] = load(base + k * CBLOCK);
#pragma unroll
    for (int k = 0; k < VPT; k++) store(base + k * CBLOCK, r[k]);
    return;
  }
#pragma unroll
  for (int k = 0; k < VPT; k++)
    if (base + k * CBLOCK < nv) r[k] = load(base + k * CBLOCK);
#pragma unroll
  for (int k = 0; k < VPT; k++)
    if (base + k * CBLOCK < nv) store(base + k * CBLOCK, r[k]);
  const I done = nv * (I)VW;
  if (threadIdx.x < n - done) tail(done + threadIdx.x);
}

// The contiguous kernels' walk over n elements (chunk_vectors), with 32-bit indices when every
// index fits.
//
// Measured with Nsight Compute and the machine code on the H200: a grid-stride loop spent 35 of a
// float32 gelu thread's 150 instructions (four elements) on the loop, bounds and the tail, where
// PyTorch's kernel spends 12 of 227 (eight elements), and gelu is issue-bound. This is PyTorch's
// shape: no loop, one block-uniform bounds test, and 32-bit indices when every index fits (64-bit
// index arithmetic made the float16 gelu 3% slower than the loop's 32-bit one). Testing for the
// tail after both index widths' paths had joined cost every thread of a whole block the join, a
// flag and the last-block test (the machine code, benches/ncu/sass.sh): 250 → 243 instructions a
// float16 gelu thread (PyTorch's: 237), 138 → 131 in float32, 49 → 42 for float16 `x * 2`.
template <class Load, class Store, class Tail>
__device__ __forceinline__ void contig_each(i64 n, Load load, Store store, Tail tail) {
  if (n < 0x80000000LL)
    chunk_vectors((unsigned)n, load, store, tail);
  else
    chunk_vectors(n, load, store, tail);
}
