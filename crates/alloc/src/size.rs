//! The size constants and size mapping of the caching allocator, as PyTorch's
//! CUDACachingAllocator.cpp has them.

/// Every request is rounded up to a multiple of this (and is at least this).
pub const MIN_BLOCK_SIZE: usize = 512;
/// Rounded sizes up to this go to the small pool (the rounded size decides: 1048576 B is small,
/// 1048577 B large, whatever `memory.py`'s docstring suggests).
pub const SMALL_SIZE: usize = 1 << 20;
/// Segment size of the small pool.
pub const SMALL_BUFFER: usize = 2 << 20;
/// Segment size of large requests below [`MIN_LARGE_ALLOC`].
pub const LARGE_BUFFER: usize = 20 << 20;
/// Large requests at or above this get a segment of their own, rounded to [`ROUND_LARGE`].
pub const MIN_LARGE_ALLOC: usize = 10 << 20;
/// Rounding granularity of segments of big requests.
pub const ROUND_LARGE: usize = 2 << 20;
/// Requests of this many bytes or more fail at once (PyTorch's "more than 1EB" guard).
pub const ONE_EXA_BYTES: usize = 1 << 60;
/// Number of power-of-two size intervals of `roundup_power2_divisions` (1 MiB up to 64 GiB).
pub const ROUNDUP_INTERVALS: usize = 16;

/// Rounds a request up to the block size the allocator hands out, with `divisions` the
/// `roundup_power2_divisions` setting of the request's size interval.
pub fn round_size_with(n: usize, divisions: usize) -> usize {
    if n < MIN_BLOCK_SIZE {
        MIN_BLOCK_SIZE
    } else if divisions > 1 && n > MIN_BLOCK_SIZE * divisions {
        roundup_power2_next_division(n, divisions)
    } else {
        n.div_ceil(MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE
    }
}

/// Rounds `size` up to the next of `divisions` equal steps between two powers of two.
pub fn roundup_power2_next_division(size: usize, divisions: usize) -> usize {
    if size.is_power_of_two() {
        return size;
    }
    let floor = 1usize << (usize::BITS - 1 - size.leading_zeros());
    let step = floor >> (usize::BITS - 1 - divisions.leading_zeros());
    if step == 0 {
        return floor << 1;
    }
    let rounded_floor = size & !(step - 1);
    if rounded_floor == size {
        size
    } else {
        rounded_floor + step
    }
}

/// Index of the `roundup_power2_divisions` interval that `size` falls in.
pub fn roundup_interval(size: usize) -> usize {
    let log = (usize::BITS - 1 - size.max(1).leading_zeros()) as i64;
    (log - 20).clamp(0, ROUNDUP_INTERVALS as i64 - 1) as usize
}

/// Size of the new segment to allocate for a rounded request that no cached block fits.
///
/// Note [Segment sizes]: a device allocation is slow and synchronises, so small requests share
/// 2 MiB segments and medium ones 20 MiB segments that later requests carve up; from 10 MiB a
/// request gets a segment of its own, rounded to 2 MiB, since a shared 20 MiB one would keep
/// little for anyone else. That is why a 4 MB tensor reserves 20 MiB.
pub fn get_allocation_size(size: usize) -> usize {
    if size <= SMALL_SIZE {
        SMALL_BUFFER
    } else if size < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        size.div_ceil(ROUND_LARGE) * ROUND_LARGE
    }
}

/// PyTorch's C++ `format_size`: bytes up to 1024, then KiB/MiB/GiB with two decimals.
pub fn format_size(size: u64) -> String {
    const KIB: f64 = 1024.0;
    if size <= 1024 {
        format!("{size} bytes")
    } else if size <= 1 << 20 {
        format!("{:.2} KiB", size as f64 / KIB)
    } else if size <= 1 << 30 {
        format!("{:.2} MiB", size as f64 / (KIB * KIB))
    } else {
        format!("{:.2} GiB", size as f64 / (KIB * KIB * KIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power2_divisions_round_between_powers_of_two() {
        // 1200 MiB with 4 divisions: step 256 MiB above 1024 MiB, so 1280 MiB.
        assert_eq!(roundup_power2_next_division(1200 << 20, 4), 1280 << 20);
        assert_eq!(roundup_power2_next_division(1 << 30, 4), 1 << 30);
        assert_eq!(roundup_interval(1), 0);
        assert_eq!(roundup_interval(3 << 20), 1);
        assert_eq!(roundup_interval(1 << 40), 15);
    }

    #[test]
    fn format_size_boundaries_are_inclusive() {
        assert_eq!(format_size(0), "0 bytes");
        assert_eq!(format_size(1024), "1024 bytes");
        assert_eq!(format_size(1 << 20), "1024.00 KiB");
        assert_eq!(format_size(200 << 30), "200.00 GiB");
    }
}
