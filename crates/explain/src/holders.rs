//! Who holds GPU memory: for every live block, the variables, gradients and autograd graphs that
//! keep it alive.
//!
//! The session's variables are walked (into arrays, maps and optimizers' state), and from each
//! tensor its `.grad` and the graph behind it: every node's saved tensors and the leaves it points
//! to. Each storage found is matched, by address, with the allocator's live blocks. A block nothing
//! in the session reaches is named for what it is when torchlet knows (a cuBLAS workspace), else
//! said to be held outside the session's variables.
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use torchlet_alloc::DevicePtr;
use torchlet_core::autograd::{Edge, Node};
use torchlet_core::device::{Device, Storage};
use torchlet_core::tensor::Tensor;

use crate::display::{html_escape as escape, DisplayData};
use crate::value::{key_name, member_path, Value};

/// One live block and what keeps it alive.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockHolders {
    /// The block's address.
    pub address: DevicePtr,
    /// Bytes the block takes (rounded, as `memory_allocated` counts it).
    pub size: u64,
    /// Bytes asked for.
    pub requested: u64,
    /// The address of the segment the block sits in.
    pub segment: DevicePtr,
    /// That segment's size.
    pub segment_size: u64,
    /// What holds it, each as a short phrase: `x`, `keep[2]`, `w.grad`,
    /// "saved by ExpBackward0 of `h`".
    pub holders: Vec<String>,
    /// The statement that made it, `FILE:LINE:COL: text`, when a script did.
    pub made_by: Option<String>,
}

/// What each storage is held by, keyed by (device, address).
#[derive(Default)]
pub struct HolderMap {
    held: HashMap<(Device, DevicePtr), (Vec<String>, u64)>,
    /// The top-level tensors, which spell the keys of a [`Value::Keyed`] (`opt.state[w]`).
    names: Vec<(String, Tensor)>,
}

impl HolderMap {
    /// Walk `variables` (name, value) and everything their tensors keep alive.
    pub fn of_variables<'a>(
        variables: impl Iterator<Item = (&'a str, &'a Value)> + Clone,
    ) -> HolderMap {
        let names = variables
            .clone()
            .filter_map(|(n, v)| Some((n.to_string(), v.as_tensor()?.clone())))
            .collect();
        let mut map = HolderMap {
            held: HashMap::new(),
            names,
        };
        for (name, value) in variables {
            map.value(name, value);
        }
        map
    }

    /// The first holder of the storage at `address` that is not `path` or under it (its
    /// members, `.grad`, graph): what would still hold the block were `path` gone.
    pub fn other_than(&self, device: Device, address: DevicePtr, path: &str) -> Option<&String> {
        self.get(device, address)
            .iter()
            .find(|h| !is_under(owner(h), path))
    }

    /// The holders of the storage at `address` on `device`.
    pub fn get(&self, device: Device, address: DevicePtr) -> &[String] {
        self.held
            .get(&(device, address))
            .map_or(&[], |(h, _)| h.as_slice())
    }

    /// Every storage found: (device, address), its holders, its bytes.
    pub fn entries(&self) -> impl Iterator<Item = ((Device, DevicePtr), &[String], u64)> {
        self.held
            .iter()
            .map(|(key, (h, bytes))| (*key, h.as_slice(), *bytes))
    }

    fn add(&mut self, storage: &Storage, holder: String) {
        if storage.bytes() == 0 {
            return;
        }
        let (holders, bytes) = self
            .held
            .entry((storage.device(), storage.ptr()))
            .or_default();
        *bytes = storage.bytes() as u64;
        if holders.contains(&holder) {
            return;
        }
        // Names first, then what graphs hold: the name is what a reader looks for.
        let at = match is_name(&holder) {
            true => holders
                .iter()
                .position(|h| !is_name(h))
                .unwrap_or(holders.len()),
            false => holders.len(),
        };
        holders.insert(at, holder);
    }

    fn value(&mut self, path: &str, value: &Value) {
        match value {
            Value::Tensor(t) => self.tensor(path, t),
            Value::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.value(&format!("{path}[{i}]"), item);
                }
            }
            Value::Map(members) => {
                for (key, item) in members {
                    self.value(&member_path(path, key), item);
                }
            }
            Value::Indexed(entries) => {
                for (index, item) in entries {
                    self.value(&format!("{path}[{index}]"), item);
                }
            }
            Value::Holds(tensors) => {
                for (sub, t) in tensors {
                    self.add(t.storage(), format!("{path}.{sub}"));
                }
            }
            Value::Keyed(entries) => {
                for (i, (key, item)) in entries.iter().enumerate() {
                    let at = format!("{path}[{}]", key_name(key, i, &self.names));
                    self.value(&at, item);
                }
            }
            Value::Function(captured) => {
                for (i, item) in captured.iter().enumerate() {
                    self.value(&format!("{path}.__closure__[{i}]"), item);
                }
            }
            Value::Other => {}
        }
    }

    fn tensor(&mut self, path: &str, t: &Tensor) {
        self.add(t.storage(), path.to_string());
        if let Some(g) = t.grad() {
            self.add(g.storage(), format!("{path}.grad"));
        }
        if let Some(node) = t.grad_fn() {
            self.graph(path, node);
        }
    }

    /// Everything the graph behind `owner` keeps alive.
    fn graph(&mut self, owner: &str, root: Arc<Node>) {
        let mut seen: HashSet<*const Node> = HashSet::new();
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            if !seen.insert(Arc::as_ptr(&node)) {
                continue;
            }
            for storage in node.saved_storages() {
                self.add(&storage, format!("saved by {} of `{owner}`", node.name()));
            }
            for edge in node.inputs() {
                match edge {
                    Edge::Node(next) => stack.push(next.clone()),
                    Edge::Leaf(leaf) => {
                        self.add(leaf.storage(), format!("a leaf of `{owner}`'s graph"));
                        if let Some(g) = leaf.grad() {
                            self.add(g.storage(), format!("a leaf's .grad in `{owner}`'s graph"));
                        }
                    }
                }
            }
        }
    }
}

/// Whether a holder is a variable path (`x`, `keep[2]`, `w.grad`) rather than a phrase.
pub fn is_name(holder: &str) -> bool {
    !holder.contains(' ')
}

/// The variable path a holder names: the name itself, or the owner of the graph it speaks of.
pub fn owner(holder: &str) -> &str {
    if is_name(holder) {
        return holder;
    }
    match holder.split_once('`') {
        Some((_, rest)) => rest.split_once('`').map_or(rest, |(o, _)| o),
        None => holder,
    }
}

/// Whether `owner` is `path` or a member, item or `.grad` under it.
pub fn is_under(owner: &str, path: &str) -> bool {
    owner
        .strip_prefix(path)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// The (node, owner) of a graph's save, the holder "saved by MulBackward0 of `loss`".
pub fn saved_by(holder: &str) -> Option<(&str, &str)> {
    holder.strip_prefix("saved by ")?.split_once(" of ")
}

/// A holder as a noun phrase: a name in backticks, a graph's hold spelled out.
pub fn noun(holder: &str) -> String {
    if is_name(holder) {
        return format!("`{holder}`");
    }
    if let Some((node, owner)) = saved_by(holder) {
        return format!("a tensor the graph of {owner} saves ({node})");
    }
    if let Some(owner) = holder
        .strip_prefix("a leaf of ")
        .and_then(|r| r.strip_suffix("'s graph"))
    {
        return format!("a leaf of the graph of {owner}");
    }
    holder.to_string()
}

/// Every holder of one block as one phrase, names first. The graph saves are grouped: a block
/// that two nodes save, reachable from three variables' graphs, is one phrase ("a tensor the
/// graphs of `x`, `logits` and `loss` save (BmmBackward0, SoftmaxBackward0)"), not six.
pub fn phrase(holders: &[String]) -> String {
    let mut parts = Vec::new();
    let (mut nodes, mut owners) = (Vec::<&str>::new(), Vec::<&str>::new());
    for holder in holders {
        let Some((node, owner)) = saved_by(holder) else {
            parts.push(noun(holder));
            continue;
        };
        if !nodes.contains(&node) {
            nodes.push(node);
        }
        if !owners.contains(&owner) {
            owners.push(owner);
        }
    }
    if !owners.is_empty() {
        let (graphs, verb) = if owners.len() == 1 {
            ("graph", "saves")
        } else {
            ("graphs", "save")
        };
        let of = listing(&owners);
        parts.push(format!(
            "a tensor the {graphs} of {of} {verb} ({})",
            nodes.join(", ")
        ));
    }
    listing(&parts)
}

/// "a", "a and b", "a, b and c".
fn listing<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        [rest @ .., last] => {
            let head: Vec<&str> = rest.iter().map(|s| s.as_ref()).collect();
            format!("{} and {}", head.join(", "), last.as_ref())
        }
    }
}

/// Blocks held the same way, added up: one line of the out-of-memory notes.
#[derive(Clone, Debug, PartialEq)]
pub struct HolderGroup {
    /// What holds them, as a phrase ("12 tensors the graphs of `x` and `h` save (SoftmaxBackward0)").
    pub phrase: String,
    /// How many blocks.
    pub blocks: usize,
    /// Their bytes, added up.
    pub bytes: u64,
}

/// What holds a block, with the items of a list told apart only by their position
/// (`layers[3].fc_w` is `layers[…].fc_w`) and a graph's saves by the nodes that save it: blocks
/// with the same key are held the same way.
fn group_key(holders: &[String]) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut nodes: Vec<&str> = Vec::new();
    for holder in holders {
        match saved_by(holder) {
            Some((node, _)) => nodes.push(node),
            None if is_name(holder) => names.push(without_indices(holder)),
            None => names.push(holder.clone()),
        }
    }
    nodes.sort_unstable();
    nodes.dedup();
    match names.first() {
        Some(name) => name.clone(),
        None => format!("saved by {}", nodes.join(", ")),
    }
}

/// `layers[3].fc_w` as `layers[…].fc_w`.
fn without_indices(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].find(']').map_or(rest.len(), |c| open + c + 1);
        let inner = &rest[open + 1..close.saturating_sub(1).max(open + 1)];
        out += &rest[..open];
        out += if inner.chars().all(|c| c.is_ascii_digit()) {
            "[…]"
        } else {
            &rest[open..close]
        };
        rest = &rest[close..];
    }
    out + rest
}

/// `blocks` grouped by what holds them, biggest total first (the first block's order among
/// equals): three blocks that the same nodes of a graph save are one line with their sum.
pub fn groups(blocks: &[BlockHolders]) -> Vec<HolderGroup> {
    let mut keyed: Vec<(String, Vec<&BlockHolders>)> = Vec::new();
    for b in blocks {
        let key = group_key(&b.holders);
        match keyed.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(b),
            None => keyed.push((key, vec![b])),
        }
    }
    let mut groups: Vec<HolderGroup> = keyed
        .into_iter()
        .map(|(key, members)| {
            let bytes = members.iter().map(|b| b.size).sum();
            let phrase = match members.as_slice() {
                [one] => phrase(&one.holders),
                many => group_phrase(&key, many),
            };
            HolderGroup {
                phrase,
                blocks: members.len(),
                bytes,
            }
        })
        .collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.bytes));
    groups
}

/// "torchlet: the biggest holders: 24 tensors the graphs of `x` and `h` save (SoftmaxBackward0)
/// 12884901888 B (12.00 GiB); …": the `n` biggest groups of [`groups`], for the out-of-memory notes.
pub fn biggest_line(blocks: &[BlockHolders], n: usize) -> String {
    if blocks.is_empty() {
        return "torchlet: no live tensor holds memory on this device".into();
    }
    let named: Vec<String> = groups(blocks)
        .iter()
        .take(n)
        .map(|g| {
            let human = crate::bytes::human_bytes(g.bytes);
            format!("{} {} B ({human})", g.phrase, g.bytes)
        })
        .collect();
    format!("torchlet: the biggest holders: {}", named.join("; "))
}

/// "12 tensors the graphs of `x` and `h` save (BmmBackward0, SoftmaxBackward0)", "12 of `layers[…].fc_w`".
fn group_phrase(key: &str, members: &[&BlockHolders]) -> String {
    let n = members.len();
    if !key.starts_with("saved by ") {
        return format!("{n} blocks of `{key}`");
    }
    let all: Vec<String> = members.iter().flat_map(|b| b.holders.clone()).collect();
    let one = phrase(&all);
    let rest = one.strip_prefix("a tensor ").unwrap_or(&one);
    format!("{n} tensors {rest}")
}

/// Every live block of cuda:`device`, biggest first, with what holds it.
pub fn block_holders(map: &HolderMap, device: usize) -> Vec<BlockHolders> {
    let Ok(allocator) = torchlet_core::device::cuda_allocator(device) else {
        return Vec::new();
    };
    let workspaces: Vec<torchlet_core::device::blas_handle::Workspace> =
        torchlet_core::device::blas_workspaces()
            .into_iter()
            .filter(|(index, _)| *index == device)
            .flat_map(|(_, w)| w)
            .collect();
    let mut blocks = Vec::new();
    for segment in allocator.snapshot().segments {
        for block in segment
            .blocks
            .iter()
            .filter(|b| b.state == "active_allocated")
        {
            let mut holders = map.get(Device::Cuda(device), block.address).to_vec();
            if holders.is_empty() {
                holders.push(match workspaces.iter().find(|w| w.ptr == block.address) {
                    Some(w) => format!("cuBLAS workspace of {}", w.handle.user()),
                    None => "no variable (a temporary, or held outside the session)".into(),
                });
            }
            blocks.push(BlockHolders {
                address: block.address,
                size: block.size,
                requested: block.requested_size,
                segment: segment.address,
                segment_size: segment.total_size,
                holders,
                made_by: block.tag.clone(),
            });
        }
    }
    blocks.sort_by(|a, b| b.size.cmp(&a.size).then(a.address.cmp(&b.address)));
    blocks
}

/// `blocks` as a table, biggest first: text for the terminal, HTML for notebooks.
pub fn table(device: usize, blocks: &[BlockHolders]) -> DisplayData {
    let total: u64 = blocks.iter().map(|b| b.size).sum();
    let mut plain = format!(
        "cuda:{device}: {} live block{}, {total} B allocated\n",
        blocks.len(),
        if blocks.len() == 1 { "" } else { "s" }
    );
    if blocks.is_empty() {
        return DisplayData::text(plain.trim_end());
    }
    plain += &format!(
        "{:>12}  {:>14}  {:>14}  {:>12}  held by\n",
        "bytes", "block", "segment", "segment size"
    );
    let mut rows = String::new();
    for b in blocks {
        let held = b.holders.join(", ");
        plain += &format!(
            "{:>12}  {:>#14x}  {:>#14x}  {:>12}  {held}\n",
            b.size, b.address, b.segment, b.segment_size
        );
        let made = b.made_by.as_deref().unwrap_or("");
        if !made.is_empty() {
            plain += &format!("{:>60}made by {made}\n", "");
        }
        rows += &format!(
            "<tr><td>{}</td><td><code>{:#x}</code></td><td><code>{:#x}</code></td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            b.size,
            b.address,
            b.segment,
            b.segment_size,
            escape(&held),
            escape(made)
        );
    }
    let html = format!(
        "<p>cuda:{device}: {} live block{}, {total} B allocated</p><table><thead><tr><th>bytes</th>\
         <th>block</th><th>segment</th><th>segment size</th><th>held by</th><th>made by</th></tr>\
         </thead><tbody>{rows}</tbody></table>",
        blocks.len(),
        if blocks.len() == 1 { "" } else { "s" }
    );
    DisplayData {
        plain: plain.trim_end().to_string(),
        html: Some(html),
    }
}

/// A segment `empty_cache()` cannot release: (segment address, segment size, [(block bytes, holders)]).
pub type PinnedSegment = (DevicePtr, u64, Vec<(u64, Vec<String>)>);

/// The segments of cuda:`device` that `empty_cache()` cannot release, each with the live blocks
/// that pin it.
pub fn pinned_segments(map: &HolderMap, device: usize) -> Vec<PinnedSegment> {
    let mut segments: Vec<PinnedSegment> = Vec::new();
    for block in block_holders(map, device) {
        match segments.iter_mut().find(|s| s.0 == block.segment) {
            Some(segment) => segment.2.push((block.size, block.holders)),
            None => segments.push((
                block.segment,
                block.segment_size,
                vec![(block.size, block.holders)],
            )),
        }
    }
    segments.sort_by_key(|s| s.0);
    segments
}

/// "empty_cache kept 1 segment (20971520 B): 0x… pinned by `y` (4000256 B)".
pub fn pinned_text(map: &HolderMap, device: usize) -> String {
    let segments = pinned_segments(map, device);
    if segments.is_empty() {
        return format!("cuda:{device}: empty_cache leaves no segment: nothing is pinned");
    }
    let total: u64 = segments.iter().map(|s| s.1).sum();
    let mut text = format!(
        "cuda:{device}: empty_cache keeps {} segment{} ({total} B), each pinned by live blocks:",
        segments.len(),
        if segments.len() == 1 { "" } else { "s" }
    );
    // Segments by position (lowest address first), not address: the text stays the same run to run.
    for (i, (_, size, blocks)) in segments.iter().enumerate() {
        let pins: Vec<String> = blocks
            .iter()
            .map(|(bytes, holders)| format!("{} ({bytes} B)", noun(&holders[0])))
            .collect();
        text += &format!("\n  segment {} ({size} B): {}", i + 1, pins.join(", "));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phrase_of(holders: &[&str]) -> String {
        phrase(&holders.iter().map(|h| h.to_string()).collect::<Vec<_>>())
    }

    fn block(size: u64, holders: &[String]) -> BlockHolders {
        BlockHolders {
            address: size,
            size,
            requested: size,
            segment: 0,
            segment_size: 0,
            holders: holders.to_vec(),
            made_by: None,
        }
    }

    #[test]
    fn blocks_held_the_same_way_are_one_group_with_their_sum() {
        let probs = |owners: &[&str]| -> Vec<String> {
            owners
                .iter()
                .flat_map(|o| {
                    ["BmmBackward0", "SoftmaxBackward0"].map(|n| format!("saved by {n} of `{o}`"))
                })
                .collect()
        };
        let blocks = vec![
            block(536870912, &probs(&["x", "h"])),
            block(536870912, &probs(&["x", "q"])),
            block(536870912, &probs(&["x"])),
            block(1000, &["layers[0].fc_w".into()]),
            block(1000, &["layers[1].fc_w".into()]),
            block(700, &["w".into()]),
        ];
        let groups = groups(&blocks);
        let lines: Vec<(String, usize, u64)> = groups
            .into_iter()
            .map(|g| (g.phrase, g.blocks, g.bytes))
            .collect();
        assert_eq!(
            lines,
            vec![
                (
                    "3 tensors the graphs of `x`, `h` and `q` save (BmmBackward0, SoftmaxBackward0)"
                        .to_string(),
                    3,
                    3 * 536870912
                ),
                ("2 blocks of `layers[…].fc_w`".to_string(), 2, 2000),
                ("`w`".to_string(), 1, 700),
            ]
        );
    }

    #[test]
    fn one_holder_reads_as_its_noun() {
        assert_eq!(phrase_of(&["x"]), "`x`");
        assert_eq!(
            phrase_of(&["saved by MulBackward0 of `loss`"]),
            "a tensor the graph of `loss` saves (MulBackward0)"
        );
    }

    #[test]
    fn graph_saves_of_one_block_are_one_phrase_after_the_names() {
        let saves = ["x", "logits", "loss"].iter().flat_map(|owner| {
            ["BmmBackward0", "SoftmaxBackward0"].map(|n| format!("saved by {n} of `{owner}`"))
        });
        let mut holders: Vec<String> = saves.collect();
        holders.insert(2, "keep[0]".into());
        holders.push("w".into());
        assert_eq!(
            phrase(&holders),
            "`keep[0]`, `w` and a tensor the graphs of `x`, `logits` and `loss` save \
             (BmmBackward0, SoftmaxBackward0)"
        );
    }
}
