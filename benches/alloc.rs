//! Speed of the allocator's hot path: a malloc+free pair that hits the cache (targets: ≤ 100 ns,
//! and ≤ 200 ns with 10,000 other live blocks).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use torchlet_alloc::{AllocConfig, CachingAllocator, DeviceAllocator, SimulatedMemory};

fn warmed() -> CachingAllocator<SimulatedMemory> {
    CachingAllocator::new(0, SimulatedMemory::default(), AllocConfig::default())
}

fn pair(a: &CachingAllocator<SimulatedMemory>, bytes: usize) {
    let p = a.malloc(black_box(bytes), 0, None).unwrap();
    a.free(black_box(p)).unwrap();
}

fn cache_hit(c: &mut Criterion) {
    let mut g = c.benchmark_group("cache_hit_pair");
    for (name, bytes) in [("512B", 512), ("4MB", 4_000_000), ("200MB", 200_000_000)] {
        let a = warmed();
        pair(&a, bytes);
        g.bench_function(name, |b| b.iter(|| pair(&a, bytes)));
    }
    g.finish();
}

fn cache_hit_crowded(c: &mut Criterion) {
    let mut g = c.benchmark_group("cache_hit_pair_10k_live");
    for (name, bytes) in [("512B", 512), ("4MB", 4_000_000)] {
        let a = warmed();
        // 10,000 live blocks of mixed sizes in both pools, with free holes between some.
        let live: Vec<u64> = (0..12_000usize)
            .map(|i| {
                a.malloc(
                    512 * (1 + i % 7) + if i % 5 == 0 { 1 << 21 } else { 0 },
                    0,
                    None,
                )
                .unwrap()
            })
            .collect();
        for p in live.iter().step_by(6) {
            a.free(*p).unwrap();
        }
        pair(&a, bytes);
        g.bench_function(name, |b| b.iter(|| pair(&a, bytes)));
    }
    g.finish();
}

fn tagged_with_history(c: &mut Criterion) {
    let a = warmed();
    a.record_memory_history(torchlet_alloc::HistoryOptions {
        max_entries: 10_000,
        ..Default::default()
    });
    c.bench_function("cache_hit_pair_tagged_history", |b| {
        b.iter(|| {
            let p = a.malloc(black_box(4_000_000), 0, Some("x")).unwrap();
            a.free(p).unwrap();
        })
    });
}

criterion_group!(benches, cache_hit, cache_hit_crowded, tagged_with_history);
criterion_main!(benches);
