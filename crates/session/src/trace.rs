//! The memory trace and timing that `:trace on` and `:time on` print after each input.
use std::time::Duration;

use super::memory::{self, DeviceMemory};
use super::{Outcome, Session};

/// What `:trace` and `:time` switched on; the session reads it around every input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reports {
    /// Print the change in device memory after each input.
    pub trace: bool,
    /// Print the wall time of each input.
    pub time: bool,
}

/// Device memory as it was before an input ran, when tracing.
pub(crate) struct Mark(Option<Vec<DeviceMemory>>);

impl Session {
    /// Take the figures the trace compares against (nothing when tracing is off).
    pub(crate) fn before_input(&self) -> Mark {
        Mark(self.reports.trace.then(|| memory::sample().ok()).flatten())
    }

    /// Print the memory change since `mark` and the time taken, as `:trace`/`:time` asked.
    pub(crate) fn after_input(&self, mark: Mark, outcome: &Outcome) {
        let emptied = self.state.take_empty_cache_called();
        super::memplot::after_input(&self.memplot, &*self.frontend);
        // An input that did not parse ran nothing: it has no memory change to trace.
        let ran = !matches!(&outcome.error, Some(e) if e.kind == "SyntaxError");
        if let (Some(before), true) = (mark.0, ran) {
            if let Ok(after) = memory::sample() {
                self.frontend
                    .stdout(&format!("{}\n", change(&before, &after)));
                if emptied {
                    self.frontend
                        .stdout(&format!("[trace] {}\n", self.empty_cache_pins()));
                }
            }
        }
        if self.reports.time {
            self.frontend
                .stdout(&format!("Wall time: {}\n", duration(outcome.elapsed)));
        }
    }
}

impl Session {
    /// What `empty_cache()` could not release on the current device, and who pins it.
    fn empty_cache_pins(&self) -> String {
        let variables = self.named_values();
        let map =
            super::holders::HolderMap::of_variables(variables.iter().map(|(n, v)| (n.as_str(), v)));
        super::holders::pinned_text(&map, torchlet_core::device::current_device())
    }
}

/// One line per device whose figures moved: allocated and reserved deltas, segments created/released.
pub fn change(before: &[DeviceMemory], after: &[DeviceMemory]) -> String {
    let lines: Vec<String> = after
        .iter()
        .filter_map(|now| {
            let was = before
                .iter()
                .find(|b| b.index == now.index)
                .cloned()
                .unwrap_or(DeviceMemory {
                    index: now.index,
                    ..Default::default()
                });
            moved(&was, now).then(|| device_change(&was, now))
        })
        .collect();
    if lines.is_empty() {
        "[trace] no net change in device memory".into()
    } else {
        lines.join("\n")
    }
}

/// Whether a figure the trace line shows moved: a cell that only raised the peak (it made and
/// freed a temporary) has no net change, as a cell that touched nothing.
fn moved(was: &DeviceMemory, now: &DeviceMemory) -> bool {
    was.allocated != now.allocated
        || was.reserved != now.reserved
        || was.segments_created != now.segments_created
        || was.segments_released != now.segments_released
        || was.workspaces.len() != now.workspaces.len()
}

fn device_change(was: &DeviceMemory, now: &DeviceMemory) -> String {
    let mut line = format!(
        "[trace cuda:{}] allocated {} ({}), reserved {} ({})",
        now.index,
        signed(was.allocated, now.allocated),
        memory::human(now.allocated),
        signed(was.reserved, now.reserved),
        memory::human(now.reserved),
    );
    let created = now.segments_created - was.segments_created;
    let released = now.segments_released - was.segments_released;
    if created != 0 {
        line += &format!(", {created} segment{} created", plural(created));
    }
    if released != 0 {
        line += &format!(", {released} segment{} released", plural(released));
    }
    // A first matmul's jump in allocated is the cuBLAS workspace, not a tensor: say so.
    let new: Vec<String> = now
        .workspaces
        .iter()
        .filter(|w| !was.workspaces.iter().any(|old| old.handle == w.handle))
        .map(|w| format!("+{} for {}", w.bytes, w.handle.user()))
        .collect();
    if !new.is_empty() {
        line += &format!(
            "; of it, cuBLAS workspace (not a variable, kept for later matmuls) {}",
            new.join(" and ")
        );
    }
    line
}

/// `+4000256` / `-4000256` / `+0`: the exact byte change, as the article counts it.
fn signed(was: u64, now: u64) -> String {
    if now >= was {
        format!("+{}", now - was)
    } else {
        format!("-{}", was - now)
    }
}

fn plural(n: i64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A wall time in the unit that reads best: `850 µs`, `12.3 ms`, `2.41 s`.
pub fn duration(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1000.0 {
        format!("{micros:.0} µs")
    } else if micros < 1e6 {
        format!("{:.1} ms", micros / 1e3)
    } else {
        format!("{:.2} s", micros / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(allocated: u64, reserved: u64, created: i64, released: i64) -> DeviceMemory {
        DeviceMemory {
            index: 0,
            allocated,
            reserved,
            segments_created: created,
            segments_released: released,
            ..Default::default()
        }
    }

    #[test]
    fn change_shows_exact_byte_deltas_and_segments() {
        let text = change(
            &[device(0, 0, 0, 0)],
            &[device(4_000_256, 20_971_520, 1, 0)],
        );
        assert_eq!(
            text,
            "[trace cuda:0] allocated +4000256 (3.81 MiB), reserved +20971520 (20.00 MiB), \
             1 segment created"
        );
        let text = change(
            &[device(4_000_256, 20_971_520, 1, 0)],
            &[device(0, 0, 1, 1)],
        );
        assert!(text.contains("allocated -4000256") && text.contains("1 segment released"));
    }

    #[test]
    fn a_new_cublas_workspace_is_named_in_the_change() {
        use torchlet_core::device::blas_handle::{BlasHandle, Workspace};
        let mut after = device(33_554_432 + 512, 35_651_584, 2, 0);
        after.workspaces = vec![Workspace {
            handle: BlasHandle::Caller,
            ptr: 0,
            bytes: 33_554_432,
        }];
        let text = change(&[device(0, 0, 0, 0)], std::slice::from_ref(&after));
        assert!(
            text.ends_with(
                "; of it, cuBLAS workspace (not a variable, kept for later matmuls) +33554432 for matmul"
            ),
            "{text}"
        );
        // Once taken, later inputs do not mention it again.
        let mut later = after.clone();
        later.allocated += 512;
        assert!(!change(&[after], &[later]).contains("cuBLAS"));
    }

    #[test]
    fn unchanged_memory_says_so() {
        let same = [device(512, 2_097_152, 1, 0)];
        assert_eq!(
            change(&same, &same),
            "[trace] no net change in device memory"
        );
        // A temporary made and freed raises only the peak: the same net change, the same words.
        let mut peaked = same[0].clone();
        peaked.peak_allocated += 4096;
        assert_eq!(
            change(&same, &[peaked]),
            "[trace] no net change in device memory"
        );
    }

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(duration(Duration::from_micros(850)), "850 µs");
        assert_eq!(duration(Duration::from_micros(12_300)), "12.3 ms");
        assert_eq!(duration(Duration::from_millis(2_410)), "2.41 s");
    }
}
