// Host check of the contiguous kernels' walk (crates/core/src/device/cuda/kernels/contig_walk.cuh): for every n
// around a vector, a thread's share and a block, and for n around 2^31 and 2^32 (the 64-bit path),
// the grid the host launches stores every element exactly once and reads no vector past the end.
// Built by tests/gpu/contig_walk.rs with -DT=<element type> -DWIDE_VPT=<n> -DCBLOCK=<n>.
#include <cstdio>
#include <map>
#include <vector>

#define __device__
#define __forceinline__ inline
typedef long long i64;
struct Dim { unsigned x; } blockIdx, threadIdx, gridDim;
#define VW (16 / sizeof(T))
#include "../../crates/core/src/device/cuda/kernels/contig_walk.cuh"

static int fails = 0;

// Every thread of block b, one after another, counting what each element receives.
template <class Count> void run_block(i64 n, unsigned b, Count& count) {
  blockIdx.x = b;
  const i64 nv = n / (i64)VW;
  for (unsigned t = 0; t < CBLOCK; t++) {
    threadIdx.x = t;
    contig_each(
        n,
        [&](auto i) {
          if ((i64)i >= nv && fails++ < 5) printf("n=%lld: vector %lld loaded, past the last\n", n, (i64)i);
          return (i64)i;
        },
        [&](auto i, i64 loaded) {
          if ((i64)i != loaded && fails++ < 5) printf("n=%lld: vector %lld stored what %lld loaded\n", n, (i64)i, loaded);
          for (i64 k = 0; k < (i64)VW; k++) count[(i64)i * (i64)VW + k]++;
        },
        [&](i64 i) {
          if (i >= n && fails++ < 5) printf("n=%lld: tail element %lld, past the end\n", n, i);
          count[i]++;
        });
  }
}

// The host's grid (ops.rs run_contig): ceil(n / (VW * VPT * CBLOCK)) blocks.
static i64 blocks(i64 n) {
  const i64 share = (i64)VW * VPT * CBLOCK;
  return (n + share - 1) / share;
}

template <class Count> void expect_once(i64 n, i64 from, i64 to, Count& count) {
  for (i64 i = from; i < to; i++)
    if (count[i] != 1) {
      if (fails++ < 5) printf("n=%lld: element %lld stored %d times\n", n, i, (int)count[i]);
      return;
    }
}

int main() {
  const i64 share = (i64)VW * VPT * CBLOCK;
  for (i64 n = 0; n <= 3 * share + 2 * (i64)VW + 3; n++) {
    std::vector<int> count(n + 1);
    gridDim.x = (unsigned)blocks(n);
    for (unsigned b = 0; b < gridDim.x; b++) run_block(n, b, count);
    expect_once(n, 0, n, count);
  }
  for (i64 n : {0x7fffffffLL, 0x80000000LL, 0x80000000LL + 5, 0x100000000LL + 3}) {
    std::map<i64, int> count;  // the first block and the last three only
    gridDim.x = (unsigned)blocks(n);
    for (i64 b : {(i64)0, (i64)gridDim.x - 3, (i64)gridDim.x - 2, (i64)gridDim.x - 1}) run_block(n, (unsigned)b, count);
    expect_once(n, 0, share, count);
    expect_once(n, ((i64)gridDim.x - 3) * share, n, count);
    if (count.rbegin()->first != n - 1 && fails++ < 5) printf("n=%lld: the last element stored is %lld\n", n, count.rbegin()->first);
  }
  printf("%d-byte elements, %d vectors a thread, %d threads a block: %s\n", (int)sizeof(T), (int)VPT, CBLOCK,
         fails ? "FAILED" : "every element once");
  return fails != 0;
}
