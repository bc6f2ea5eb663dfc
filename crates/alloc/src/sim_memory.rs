//! A simulated GPU's memory: real host memory (so CPU kernels can compute on it) behind a fixed
//! capacity that makes allocation fail exactly as `cuMemAlloc` does when it is exceeded.

use std::collections::HashMap;

use super::placement::{Placement, GRANULE};
use super::raw::{DevicePtr, RawError, RawMemory};

/// Host memory posing as one device's memory. Addresses are real, page-aligned host addresses.
///
/// Segments come from one address range reserved up front, placed in it as an H200's driver
/// places `cuMemAlloc`s (see Note [segment placement] in `placement.rs`). The caching allocator
/// breaks ties between equally good free blocks by address, so the order of segment addresses
/// decides which block a request reuses, and with it the split statistics.
#[derive(Debug)]
pub struct SimulatedMemory {
    capacity: usize,
    used: usize,
    /// The address range segments are placed in (reserved at the first allocation).
    arena: Option<(DevicePtr, usize)>,
    /// Where in the arena each segment goes.
    placement: Option<Placement>,
    /// Live segments from `allocate`: address → bytes.
    segments: HashMap<DevicePtr, usize>,
    /// Live address reservations from `reserve`: address → bytes.
    reservations: HashMap<DevicePtr, usize>,
}

impl Default for SimulatedMemory {
    fn default() -> Self {
        SimulatedMemory::new(Self::DEFAULT_CAPACITY)
    }
}

/// Maps `bytes` of fresh anonymous memory with protection `prot`; pages cost nothing until touched.
fn mmap_anon(bytes: usize, prot: libc::c_int) -> Result<DevicePtr, RawError> {
    // SAFETY: an anonymous private mapping at an address of the kernel's choice touches no
    // existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(RawError::Driver(format!(
            "host mmap of {bytes} bytes failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(p as DevicePtr)
}

/// Drop the pages of `[ptr, ptr+bytes)` and protect it again, keeping the addresses reserved: what
/// freeing or unmapping device memory means here.
///
/// # Safety
/// The range must be mapped by the caller, and nothing may use it afterwards.
unsafe fn decommit(ptr: DevicePtr, bytes: usize) -> Result<(), RawError> {
    os_result(
        libc::madvise(ptr as *mut libc::c_void, bytes, libc::MADV_DONTNEED),
        "host madvise",
    )?;
    os_result(
        libc::mprotect(ptr as *mut libc::c_void, bytes, libc::PROT_NONE),
        "host mprotect",
    )
}

fn os_result(rc: libc::c_int, what: &str) -> Result<(), RawError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(RawError::Driver(format!(
            "{what} failed: {}",
            std::io::Error::last_os_error()
        )))
    }
}

impl SimulatedMemory {
    /// The default capacity: 16 GiB.
    pub const DEFAULT_CAPACITY: usize = 16 << 30;

    /// A device of `capacity_bytes` bytes, all free.
    pub fn new(capacity_bytes: usize) -> Self {
        SimulatedMemory {
            capacity: capacity_bytes,
            used: 0,
            arena: None,
            placement: None,
            segments: HashMap::new(),
            reservations: HashMap::new(),
        }
    }

    /// The device's total bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes currently allocated or mapped.
    pub fn used(&self) -> usize {
        self.used
    }

    fn charge(&mut self, bytes: usize) -> Result<(), RawError> {
        if bytes > self.capacity - self.used {
            return Err(RawError::OutOfMemory);
        }
        self.used += bytes;
        Ok(())
    }

    /// The address for a new segment of `bytes`, as the driver would place it.
    fn place(&mut self, bytes: usize) -> Result<DevicePtr, RawError> {
        if self.arena.is_none() {
            // Reserving address space costs no memory; Placement::span leaves room enough that
            // fragmentation of addresses never refuses what the capacity allows.
            let len = Placement::span(self.capacity) + GRANULE;
            let base = mmap_anon(len, libc::PROT_NONE)?;
            let floor = (base as usize).div_ceil(GRANULE) * GRANULE;
            let top = (base as usize + len) / GRANULE * GRANULE;
            self.arena = Some((base, len));
            self.placement = Some(Placement::new(floor as DevicePtr, top as DevicePtr));
        }
        self.placement
            .as_mut()
            .expect("made above")
            .place(bytes)
            .ok_or(RawError::OutOfMemory)
    }

    /// Return a segment's addresses to the placement.
    fn give_back(&mut self, ptr: DevicePtr, bytes: usize) {
        if let Some(p) = self.placement.as_mut() {
            p.release(ptr, bytes);
        }
    }

    /// Checks that `[ptr, ptr+bytes)` lies inside one reservation.
    fn check_reserved(&self, ptr: DevicePtr, bytes: usize) -> Result<(), RawError> {
        let inside = self
            .reservations
            .iter()
            .any(|(&start, &len)| ptr >= start && ptr + bytes as u64 <= start + len as u64);
        if inside {
            Ok(())
        } else {
            Err(RawError::Driver(format!(
                "range {ptr:#x}+{bytes} is not inside a reserved address range"
            )))
        }
    }
}

impl RawMemory for SimulatedMemory {
    fn allocate(&mut self, bytes: usize) -> Result<DevicePtr, RawError> {
        self.charge(bytes)?;
        let placed = self.place(bytes).and_then(|p| {
            // SAFETY: `p` is a hole of at least `bytes` bytes inside the arena this object owns.
            let rc = unsafe {
                libc::mprotect(
                    p as *mut libc::c_void,
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            os_result(rc, "host mprotect")
                .map(|_| p)
                .inspect_err(|_| self.give_back(p, bytes))
        });
        match placed {
            Ok(p) => {
                self.segments.insert(p, bytes);
                Ok(p)
            }
            Err(e) => {
                self.used -= bytes;
                Err(e)
            }
        }
    }

    fn free(&mut self, ptr: DevicePtr, bytes: usize) -> Result<(), RawError> {
        match self.segments.get(&ptr) {
            Some(&len) if len == bytes => {}
            _ => {
                return Err(RawError::Driver(format!(
                    "free of unknown segment {ptr:#x} ({bytes} bytes)"
                )))
            }
        }
        // SAFETY: `ptr` is a live segment of `bytes` bytes inside the arena this object owns.
        unsafe { decommit(ptr, bytes)? };
        self.segments.remove(&ptr);
        self.give_back(ptr, bytes);
        self.used -= bytes;
        Ok(())
    }

    fn mem_get_info(&self) -> Result<(usize, usize), RawError> {
        Ok((self.capacity - self.used, self.capacity))
    }

    fn process_memory_in_use(&self) -> Option<usize> {
        Some(self.used)
    }

    fn reserve(&mut self, bytes: usize) -> Result<DevicePtr, RawError> {
        let p = mmap_anon(bytes, libc::PROT_NONE)?;
        self.reservations.insert(p, bytes);
        Ok(p)
    }

    fn release_reservation(&mut self, ptr: DevicePtr, bytes: usize) -> Result<(), RawError> {
        match self.reservations.get(&ptr) {
            Some(&len) if len == bytes => {}
            _ => {
                return Err(RawError::Driver(format!(
                    "release of unknown reservation {ptr:#x}"
                )))
            }
        }
        // SAFETY: `ptr` is a live reservation of `bytes` bytes made by `reserve`.
        os_result(
            unsafe { libc::munmap(ptr as *mut libc::c_void, bytes) },
            "host munmap",
        )?;
        self.reservations.remove(&ptr);
        Ok(())
    }

    fn map(&mut self, ptr: DevicePtr, bytes: usize) -> Result<(), RawError> {
        self.check_reserved(ptr, bytes)?;
        self.charge(bytes)?;
        // SAFETY: the range lies inside a reservation this object owns.
        let rc = unsafe {
            libc::mprotect(
                ptr as *mut libc::c_void,
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        if let Err(e) = os_result(rc, "host mprotect") {
            self.used -= bytes;
            return Err(e);
        }
        Ok(())
    }

    fn unmap(&mut self, ptr: DevicePtr, bytes: usize) -> Result<(), RawError> {
        self.check_reserved(ptr, bytes)?;
        // SAFETY: the range lies inside a reservation this object owns.
        unsafe { decommit(ptr, bytes)? };
        self.used = self.used.saturating_sub(bytes);
        Ok(())
    }
}

impl Drop for SimulatedMemory {
    fn drop(&mut self) {
        // Segments live inside the arena: unmapping it and the reservations frees everything.
        for (p, len) in self
            .arena
            .into_iter()
            .chain(self.reservations.iter().map(|(&p, &l)| (p, l)))
        {
            // SAFETY: every entry is a live mapping this object made and nobody else unmaps.
            unsafe {
                libc::munmap(p as *mut libc::c_void, len);
            }
        }
    }
}
