//! Thread safety: one lock per device keeps the books exact under concurrent use.

use std::sync::Arc;

use torchlet_alloc::{AllocConfig, CachingAllocator, DeviceAllocator, SimulatedMemory};

/// The first and last 4 KiB of a block (or all of it), as one thread's mark.
fn ends(p: u64, n: usize) -> [(u64, usize); 2] {
    let k = n.min(4096);
    [(p, k), (p + (n - k) as u64, k)]
}

fn fill(p: u64, n: usize, mark: u8) {
    for (q, k) in ends(p, n) {
        // SAFETY: q..q+k lies in a live allocation owned by the calling thread.
        unsafe { std::ptr::write_bytes(q as *mut u8, mark, k) };
    }
}

fn filled(p: u64, n: usize, mark: u8) -> bool {
    ends(p, n).iter().all(|&(q, k)| {
        // SAFETY: as in `fill`.
        unsafe { std::slice::from_raw_parts(q as *const u8, k) }
            .iter()
            .all(|&b| b == mark)
    })
}

#[test]
fn concurrent_malloc_free_balances() {
    let a: Arc<dyn DeviceAllocator> = Arc::new(CachingAllocator::new(
        0,
        SimulatedMemory::default(),
        AllocConfig::default(),
    ));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let a = Arc::clone(&a);
            std::thread::spawn(move || {
                let mut held = Vec::new();
                for i in 0..2000usize {
                    let n = 512 * (1 + (i * 7 + t as usize) % 40)
                        + if i % 9 == 0 { 3 << 20 } else { 0 };
                    let p = a.malloc(n, t % 2, None).unwrap();
                    fill(p, n, t as u8);
                    held.push((p, n));
                    if i % 3 != 0 {
                        let (p, n) = held.swap_remove(i % held.len());
                        assert!(filled(p, n, t as u8), "a block was shared between threads");
                        a.free(p).unwrap();
                    }
                }
                for (p, _) in held {
                    a.free(p).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = a.memory_stats();
    assert_eq!(s["allocation.all.current"], 0);
    assert_eq!(s["allocation.all.allocated"], 8000);
    assert_eq!(s["requested_bytes.all.current"], 0);
    assert_eq!(s["inactive_split.all.current"], 0);
    a.empty_cache();
    assert_eq!(a.memory_reserved(), 0);
}
