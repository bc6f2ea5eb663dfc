//! The most host memory one request may ask for: the machine's RAM and swap.
//!
//! Linux's default overcommit mode refuses a single request larger than that by itself, and the
//! session reports the refusal as an error. With `vm.overcommit_memory = 1`, common on GPU hosts,
//! the kernel grants it instead, and the first writes past physical memory get the process killed
//! with every tensor of the session. Checking here makes such a request the same clear error on
//! every machine.

use std::sync::OnceLock;

/// Whether `bytes` could ever be held in this machine's RAM and swap together.
pub(crate) fn host_can_hold(bytes: usize) -> bool {
    bytes as u64 <= host_capacity()
}

/// An empty vector with room for `n` items, or `None` when the host cannot hold them.
pub(crate) fn reserve_host<T>(n: usize) -> Option<Vec<T>> {
    let bytes = n.checked_mul(std::mem::size_of::<T>())?;
    if !host_can_hold(bytes) {
        return None;
    }
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    Some(v)
}

/// RAM plus swap in bytes, read once; unlimited where the system does not say.
fn host_capacity() -> u64 {
    static CAPACITY: OnceLock<u64> = OnceLock::new();
    *CAPACITY.get_or_init(|| {
        // SAFETY: sysinfo only writes the struct it is given.
        let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
        if unsafe { libc::sysinfo(&mut info) } != 0 {
            return u64::MAX;
        }
        let unit = u64::from(info.mem_unit.max(1));
        (info.totalram as u64)
            .saturating_add(info.totalswap as u64)
            .saturating_mul(unit)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_past_ram_and_swap_is_refused_and_a_small_one_is_not() {
        assert!(host_can_hold(1 << 20));
        assert!(!host_can_hold(usize::MAX));
        assert!(reserve_host::<u64>(1 << 62).is_none());
        assert!(reserve_host::<u64>(16).is_some_and(|v| v.capacity() >= 16));
    }
}
