//! Building snapshots from the live blocks: each segment with its blocks in address order.

use std::collections::BTreeMap;

use super::block::NIL;
use super::caching::Inner;
use super::history::TraceAction;
use super::raw::RawMemory;
use super::snapshot::{AllocatorSettings, BlockInfo, SegmentInfo, Snapshot};

impl<M: RawMemory> Inner<M> {
    /// Segments (each contiguous mapped range), their blocks, the trace, and the settings; then
    /// a `snapshot` trace entry, which later snapshots show.
    pub fn snapshot(&mut self) -> Snapshot {
        let traces = vec![self.history.entries()];
        let arena = &self.arena;
        let mut segments = Vec::new();
        for (head_idx, head) in arena.iter() {
            if !head.mapped || (head.prev != NIL && arena[head.prev].mapped) {
                continue;
            }
            let mut seg = SegmentInfo {
                device: self.device,
                address: head.ptr,
                total_size: 0,
                allocated_size: 0,
                active_size: 0,
                requested_size: 0,
                stream: head.stream,
                segment_type: head.pool.name(),
                segment_pool_id: (0, 0),
                is_expandable: head.expandable != NIL,
                blocks: Vec::new(),
            };
            let mut i = head_idx;
            while i != NIL && arena[i].mapped {
                let b = &arena[i];
                seg.total_size += b.size as u64;
                let pending = self.events.is_pending(i);
                if b.allocated {
                    seg.allocated_size += b.size as u64;
                }
                if b.allocated || pending {
                    seg.active_size += b.size as u64;
                    seg.requested_size += b.requested as u64;
                }
                seg.blocks.push(BlockInfo {
                    address: b.ptr,
                    size: b.size as u64,
                    requested_size: b.requested as u64,
                    state: if b.allocated {
                        "active_allocated"
                    } else if pending {
                        "active_pending_free"
                    } else {
                        "inactive"
                    },
                    tag: arena.tag(i).map(|t| t.to_string()),
                });
                i = b.next;
            }
            segments.push(seg);
        }
        segments.sort_by_key(|s| s.address);
        let active = self.stats.active_bytes.all().current as usize;
        self.trace(TraceAction::Snapshot, 0, active, 0, None);
        Snapshot {
            segments,
            device_traces: traces,
            allocator_settings: self.settings(),
        }
    }

    fn settings(&self) -> AllocatorSettings {
        let c = &self.config;
        let divisions: BTreeMap<String, u64> = c
            .roundup_power2_divisions()
            .iter()
            .enumerate()
            .map(|(i, &d)| ((1u64 << i).to_string(), d as u64))
            .collect();
        AllocatorSettings {
            conf: c.settings().to_string(),
            max_split_size: c.max_split_size() as u64 as i64,
            garbage_collection_threshold: c.garbage_collection_threshold(),
            expandable_segments: c.expandable_segments(),
            roundup_power2_divisions: divisions,
        }
    }
}
