//! `explain_free(x)`: what each of the article's four ways to free memory would do to `x` right
//! now, worked out on a snapshot of the allocator, without touching it.
//!
//! `del x` frees the blocks only `x` reaches (its storage, its `.grad`, what its graph saves)
//! unless another variable or graph reaches them too; `x = x.cpu()` frees the same GPU blocks;
//! `empty_cache()` releases the segments that hold no live block; `del x; empty_cache()`
//! releases the segments whose only live blocks are the ones `del x` frees.
use std::collections::HashSet;

use crate::holders::{noun, saved_by, HolderMap};
use crate::value::Value;
use crate::DisplayData;
use torchlet_alloc::{DevicePtr, SegmentInfo};
use torchlet_core::device::Device;

/// One way to free memory and what it would do.
#[derive(Clone, Debug, PartialEq)]
pub struct Way {
    /// The statement(s), as the article writes them.
    pub code: String,
    /// Change of `memory_allocated()` in bytes.
    pub allocated: i64,
    /// Change of `memory_reserved()` in bytes.
    pub reserved: i64,
    /// Why, in one sentence.
    pub why: String,
}

/// The four ways for `name` (holding `value`) on cuda:`device`, given every variable. `name` is
/// a variable or a path into one (`l1.weight`, `opt.state[w].exp_avg`, spelled as
/// [`canonical_path`](crate::value::canonical_path) spells it): the others are everything else
/// that reaches its blocks.
pub fn explain_free<'a>(
    name: &str,
    value: &Value,
    variables: impl Iterator<Item = (&'a str, &'a Value)> + Clone,
    device: usize,
) -> Vec<Way> {
    let dev = Device::Cuda(device);
    let mine = HolderMap::of_variables(std::iter::once((name, value)));
    let all = HolderMap::of_variables(variables);
    let segments = torchlet_core::device::cuda_allocator(device)
        .map(|a| a.snapshot().segments)
        .unwrap_or_default();
    let live = |b: &&torchlet_alloc::BlockInfo| b.state == "active_allocated";
    // Blocks x reaches, split by whether anything else reaches them too.
    let mut freed: HashSet<DevicePtr> = HashSet::new();
    let mut kept: Vec<(u64, String)> = Vec::new();
    for segment in &segments {
        for block in segment.blocks.iter().filter(live) {
            if mine.get(dev, block.address).is_empty() {
                continue;
            }
            match all.other_than(dev, block.address, name) {
                None => {
                    freed.insert(block.address);
                }
                Some(holder) => kept.push((block.size, holder.clone())),
            }
        }
    }
    let freed_bytes: u64 = segments
        .iter()
        .flat_map(|s| s.blocks.iter().filter(live))
        .filter(|b| freed.contains(&b.address))
        .map(|b| b.size)
        .sum();
    let idle = release(&segments, &HashSet::new());
    let after_del = release(&segments, &freed);
    let del_why = del_sentence(name, freed_bytes, &kept);
    vec![
        Way {
            code: format!("del {name}"),
            allocated: -(freed_bytes as i64),
            reserved: 0,
            why: format!("{del_why}; the cache keeps the memory reserved"),
        },
        Way {
            code: format!("{name} = {name}.cpu()"),
            allocated: if copy_keeps_original(value) {
                0
            } else {
                -(freed_bytes as i64)
            },
            reserved: 0,
            why: cpu_sentence(name, value, &del_why),
        },
        Way {
            code: "empty_cache()".into(),
            allocated: 0,
            reserved: -(idle.bytes as i64),
            why: idle.sentence(&all, &mine, dev, name, false),
        },
        Way {
            code: format!("del {name}; empty_cache()"),
            allocated: -(freed_bytes as i64),
            reserved: -(after_del.bytes as i64),
            why: after_del.sentence(&all, &mine, dev, name, true),
        },
    ]
}

/// Whether `x.cpu()` records a graph that keeps `x` itself alive (it requires grad).
fn copy_keeps_original(value: &Value) -> bool {
    value
        .as_tensor()
        .is_some_and(|t| t.requires_grad() && torchlet_core::autograd::is_grad_enabled())
}

fn cpu_sentence(name: &str, value: &Value, del_why: &str) -> String {
    if value.as_tensor().is_none() {
        return format!("`{name}` is no tensor, so it has no .cpu(); `del` would do this");
    }
    if copy_keeps_original(value) {
        return format!(
            "`{name}` requires grad, so the copy's graph (ToCopyBackward0) keeps the GPU tensor \
             alive; write `{name} = {name}.detach().cpu()` to free it"
        );
    }
    format!("on the GPU this is a `del`: {del_why}")
}

fn del_sentence(name: &str, freed: u64, kept: &[(u64, String)]) -> String {
    match (freed, kept.first()) {
        (0, None) => format!("`{name}` holds no GPU memory"),
        (0, Some((size, holder))) => {
            format!("{}, so nothing is freed", also_holds(holder, name, *size))
        }
        (bytes, None) => format!("{bytes} B that only `{name}` holds go back to the cache"),
        (bytes, Some((size, holder))) => format!(
            "{bytes} B go back to the cache, but {}",
            also_holds(holder, name, *size)
        ),
    }
}

/// "`y` also holds x's memory (4000256 B)", "the graph of `loss` also saves x (…)".
fn also_holds(holder: &str, name: &str, size: u64) -> String {
    if let Some((node, owner)) = saved_by(holder) {
        return format!("the graph of {owner} also saves {name} ({node}, {size} B)");
    }
    format!("{} also holds {name}'s memory ({size} B)", noun(holder))
}

/// What `empty_cache()` would release once `freed` blocks are free.
struct Release<'a> {
    bytes: u64,
    released: usize,
    /// Segments that stay, with one live block that pins each.
    pinned: Vec<(&'a SegmentInfo, DevicePtr, u64)>,
    expandable: bool,
}

fn release<'a>(segments: &'a [SegmentInfo], freed: &HashSet<DevicePtr>) -> Release<'a> {
    let mut out = Release {
        bytes: 0,
        released: 0,
        pinned: Vec::new(),
        expandable: false,
    };
    for segment in segments {
        out.expandable |= segment.is_expandable;
        let pin = segment
            .blocks
            .iter()
            .find(|b| b.state == "active_allocated" && !freed.contains(&b.address));
        match pin {
            None => {
                out.bytes += segment.total_size;
                out.released += 1;
            }
            Some(block) => out.pinned.push((segment, block.address, block.size)),
        }
    }
    out
}

impl Release<'_> {
    fn sentence(
        &self,
        all: &HolderMap,
        mine: &HolderMap,
        dev: Device,
        name: &str,
        del: bool,
    ) -> String {
        let mut why = if self.released > 0 {
            format!(
                "releases {} segment{} ({} B) that hold{} no live block",
                self.released,
                if self.released == 1 { "" } else { "s" },
                self.bytes,
                if self.released == 1 { "s" } else { "" }
            )
        } else {
            "every segment holds a live block: nothing is released".to_string()
        };
        // The segment of x that stays, and who pins it.
        let of_x = self.pinned.iter().find(|(segment, _, _)| {
            segment
                .blocks
                .iter()
                .any(|b| !mine.get(dev, b.address).is_empty())
        });
        match of_x {
            Some(_) if !del => why = format!("{why}; `{name}` is alive, so its segment stays"),
            Some((_, pin, size)) => {
                let holder = all
                    .other_than(dev, *pin, name)
                    .cloned()
                    .unwrap_or_else(|| "a block no variable holds".into());
                why = match mine.get(dev, *pin).is_empty() {
                    true => format!(
                        "{why}; {name}'s segment also holds {} ({size} B), so empty_cache cannot release it",
                        noun(&holder)
                    ),
                    false => format!(
                        "{why}; {} still holds {name}'s block ({size} B), so its segment stays",
                        noun(&holder)
                    ),
                };
            }
            None => {}
        }
        if self.expandable {
            why += " (expandable segments also give back free pages of partly used segments; those are not counted)";
        }
        why
    }
}

/// The four ways as a table: text for the terminal, HTML for notebooks.
pub fn table(name: &str, ways: &[Way]) -> DisplayData {
    let mut plain = format!("what freeing `{name}` would do now:\n");
    let mut rows = String::new();
    for way in ways {
        plain += &format!(
            "  {:<28} Δallocated {:>12}  Δreserved {:>12}\n      why: {}\n",
            way.code, way.allocated, way.reserved, way.why
        );
        rows += &format!(
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            way.code, way.allocated, way.reserved, way.why
        );
    }
    let html = format!(
        "<p>what freeing <code>{name}</code> would do now</p><table><thead><tr><th>way</th>\
         <th>Δallocated</th><th>Δreserved</th><th>why</th></tr></thead><tbody>{rows}</tbody></table>"
    );
    DisplayData {
        plain: plain.trim_end().to_string(),
        html: Some(html.replace('`', "")),
    }
}
