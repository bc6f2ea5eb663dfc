//! PyTorch's launch plan for a CUDA reduction (ATen's `setReduceConfig`), and the global staging
//! buffer and semaphores it takes from the caching allocator when it splits outputs across blocks.
//!
//! PyTorch's `gpu_reduce_kernel` lays the reduction out with a TensorIterator (dims reordered
//! fastest first, reduced dims in front, mergeable neighbours coalesced), sizes a block from that
//! layout, and splits each output over `ctas_per_output` blocks when there are few outputs and
//! many inputs each. Those blocks meet in a staging buffer (`global_memory_size` bytes) and count
//! their arrivals in one int semaphore per block column (`semaphore_size` bytes); both come from
//! the caching allocator for the launch and are freed right after it, so they show in
//! `memory_stats` and in the allocator history. This module reproduces that arithmetic exactly;
//! `tests/tensors/reduce_scratch.rs` checks it against PyTorch 2.11 on an H200.

use torchlet_alloc::types::DType;

use super::backend::ReduceOp;
use super::reduction::{Finish, Fold, Partial};

/// The device properties a reduction plan reads (PyTorch's `cudaDeviceProp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceProps {
    /// Streaming multiprocessors (`multiProcessorCount`).
    pub sm_count: usize,
    /// Resident threads per multiprocessor (`maxThreadsPerMultiProcessor`).
    pub max_threads_per_sm: usize,
    /// Threads per warp.
    pub warp_size: usize,
}

impl DeviceProps {
    /// An NVIDIA H200 (compute capability 9.0), what the simulated GPU stands for.
    pub const H200: DeviceProps = DeviceProps {
        sm_count: 132,
        max_threads_per_sm: 2048,
        warp_size: 32,
    };
}

/// The template arguments of PyTorch's reduction kernel that shape its plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelTraits {
    /// Bytes of the element the kernel reads (`sizeof(scalar_t)`).
    pub input_size: usize,
    /// Bytes of the accumulator (`sizeof(arg_t)`): one staging slot.
    pub acc_size: usize,
    /// Values each thread loads per step (`vt0`).
    pub vt0: usize,
    /// Width of a vectorised input load (`input_vec_size`).
    pub input_vec_size: usize,
    /// Threads per block at most (`mnt_wrapper<scalar_t>::MAX_NUM_THREADS`).
    pub max_threads: usize,
}

impl KernelTraits {
    /// PyTorch's kernel for `op` over an input of `dtype`; `indices`: max/min along a dim, which
    /// computes values and indices together (`MaxOps`/`MinOps`).
    pub fn of(op: ReduceOp, dtype: DType, indices: bool) -> KernelTraits {
        let size = dtype.size();
        let float_acc = if dtype == DType::F64 { 8 } else { 4 };
        let (input_size, acc_size) = match op.partial(indices) {
            // Integer and bool sums read an int64 copy of the input and accumulate in int64.
            Partial::Acc if !dtype.is_float() => (8, 8),
            // Half and bfloat16 accumulate in float.
            Partial::Acc => (size, float_acc),
            // The values-only kernels (amax, max()) accumulate in the element type itself.
            Partial::Elem => (size, size),
            // A (value, int64 index) pair: 16 bytes for every element type.
            Partial::Pair => (size, 16),
        };
        // Plain sums of 16-bit floats ask for 8-wide loads with vt0 = 4, which turns input
        // vectorisation off (it needs vt0 >= input_vec_size); PyTorch's mean keeps 4.
        let plain_sum = op.fold() == Fold::Sum && op.finish() == Finish::Value;
        let input_vec_size = if plain_sum && input_size == 2 { 8 } else { 4 };
        KernelTraits {
            input_size,
            acc_size,
            vt0: 4,
            input_vec_size,
            max_threads: 512,
        }
    }
}

/// A reduction as PyTorch's TensorIterator lays it out (strides in elements, fastest dim first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReduceIter {
    /// Sizes after reordering and coalescing.
    pub shape: Vec<usize>,
    /// The input's strides, in elements.
    pub input_strides: Vec<usize>,
    /// The output's strides, in elements; 0 along reduced dims.
    pub output_strides: Vec<usize>,
}

impl ReduceIter {
    /// Lay out reducing `sizes`/`strides` over `reduced` (dims, any order) into a contiguous
    /// output, as `TensorIterator::reduce_op` does.
    pub fn new(sizes: &[usize], strides: &[usize], reduced: &[usize]) -> ReduceIter {
        let n = sizes.len();
        let kept: Vec<usize> = (0..n)
            .map(|d| if reduced.contains(&d) { 1 } else { sizes[d] })
            .collect();
        let mut out = vec![1usize; n];
        for d in (0..n.saturating_sub(1)).rev() {
            out[d] = out[d + 1] * kept[d + 1].max(1);
        }
        for d in 0..n {
            // A broadcast (size-1 output, larger input) dim gets stride 0, as compute_strides does.
            if kept[d] == 1 && sizes[d] != 1 {
                out[d] = 0;
            }
        }
        let mut it = ReduceIter {
            shape: sizes.to_vec(),
            input_strides: strides.to_vec(),
            output_strides: out,
        };
        it.reorder();
        it.coalesce();
        it
    }

    /// 1 if dim `a` should come after dim `b`, -1 if before, 0 if the operands do not say.
    fn should_swap(&self, a: usize, b: usize) -> i32 {
        for (is_output, st) in [(true, &self.output_strides), (false, &self.input_strides)] {
            let (s0, s1) = (st[a], st[b]);
            if is_output && ((s0 == 0) != (s1 == 0)) {
                // Reduced dims move to the front.
                return if s1 == 0 { 1 } else { -1 };
            }
            if s0 == 0 || s1 == 0 {
                continue;
            }
            if s0 != s1 {
                return if s0 < s1 { -1 } else { 1 };
            }
            if self.shape[a] > self.shape[b] {
                return 1;
            }
        }
        0
    }

    /// `reorder_dimensions`: an insertion sort, from the reversed order, that tolerates ties.
    fn reorder(&mut self) {
        let n = self.shape.len();
        if n <= 1 {
            return;
        }
        let mut perm: Vec<usize> = (0..n).rev().collect();
        for i in 1..n {
            let mut d1 = i;
            for d0 in (0..i).rev() {
                match self.should_swap(perm[d0], perm[d1]) {
                    c if c > 0 => {
                        perm.swap(d0, d1);
                        d1 = d0;
                    }
                    c if c < 0 => break,
                    _ => {}
                }
            }
        }
        let apply = |v: &Vec<usize>| perm.iter().map(|&p| v[p]).collect::<Vec<usize>>();
        self.shape = apply(&self.shape);
        self.input_strides = apply(&self.input_strides);
        self.output_strides = apply(&self.output_strides);
    }

    /// `coalesce_dimensions`: merge neighbours that are one run of memory in every operand.
    fn coalesce(&mut self) {
        let n = self.shape.len();
        if n <= 1 {
            return;
        }
        let mut prev = 0;
        for d in 1..n {
            let (s0, s1) = (self.shape[prev], self.shape[d]);
            let mergeable = s0 == 1
                || s1 == 1
                || [&self.input_strides, &self.output_strides]
                    .iter()
                    .all(|st| s0 * st[prev] == st[d]);
            if mergeable {
                if s0 == 1 {
                    self.input_strides[prev] = self.input_strides[d];
                    self.output_strides[prev] = self.output_strides[d];
                }
                self.shape[prev] *= s1;
            } else {
                prev += 1;
                if prev != d {
                    self.input_strides[prev] = self.input_strides[d];
                    self.output_strides[prev] = self.output_strides[d];
                    self.shape[prev] = self.shape[d];
                }
            }
        }
        self.shape.truncate(prev + 1);
        self.input_strides.truncate(prev + 1);
        self.output_strides.truncate(prev + 1);
    }

    /// Dims the output does not move along (the reduced ones, at the front).
    pub fn num_reduce_dims(&self) -> usize {
        self.output_strides.iter().filter(|&&s| s == 0).count()
    }

    /// Elements of the input.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Elements of the output.
    pub fn num_outputs(&self) -> usize {
        (0..self.shape.len())
            .filter(|&d| self.output_strides[d] != 0 || self.shape[d] == 0)
            .map(|d| self.shape[d])
            .product()
    }

    /// Whether PyTorch indexes this reduction with 32-bit offsets (else it splits it into
    /// sub-reductions, which this module does not model).
    pub fn fits_32bit(&self, input_size: usize, output_size: usize) -> bool {
        let limit = i32::MAX as usize;
        let span = |st: &Vec<usize>, size: usize| {
            1 + (0..self.shape.len())
                .map(|d| self.shape[d].saturating_sub(1) * st[d] * size)
                .sum::<usize>()
        };
        self.numel() <= limit
            && span(&self.input_strides, input_size) <= limit
            && span(&self.output_strides, output_size) <= limit
    }
}

/// PyTorch's `ReduceConfig`: how threads, blocks and the grid split inputs and outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReduceConfig {
    /// Bytes of one accumulator.
    pub element_size: usize,
    /// Inputs reduced into each output.
    pub num_inputs: usize,
    /// Outputs.
    pub num_outputs: usize,
    /// Input elements between a thread's consecutive loads.
    pub step_input: usize,
    /// Outputs between consecutive blocks along the grid's x.
    pub step_output: usize,
    /// Blocks that share one output (the grid's y).
    pub ctas_per_output: usize,
    /// Input strides of lane, warp and block (0: that level does not split the input).
    pub input_mult: [usize; 3],
    /// Output strides of lane and warp (0: that level does not split the outputs).
    pub output_mult: [usize; 2],
    /// Threads along x.
    pub block_width: usize,
    /// Threads along y.
    pub block_height: usize,
    /// Threads per block.
    pub num_threads: usize,
    /// Whether threads load `input_vec_size` inputs at once.
    pub vectorize_input: bool,
    /// Outputs each thread computes at once.
    pub output_vec_size: usize,
}

impl ReduceConfig {
    fn split_input(&mut self, parallelism: usize) -> usize {
        let step = self.step_input;
        self.step_input *= parallelism;
        step
    }

    fn split_output(&mut self, parallelism: usize) -> usize {
        let step = self.step_output;
        self.step_output *= parallelism;
        step
    }

    fn set_block_dimension(
        &mut self,
        dim0: usize,
        dim1: usize,
        traits: &KernelTraits,
        warp: usize,
    ) {
        let max = traits.max_threads / self.output_vec_size;
        let pow2 = |d: usize| if d < max { last_pow2(d) } else { max };
        let (d0, d1) = (pow2(dim0), pow2(dim1));
        self.block_width = d0.min(warp);
        self.block_height = d1.min(max / self.block_width);
        self.block_width = d0.min(max / self.block_height);
        self.num_threads = self.block_width * self.block_height;
    }

    /// Blocks along x (`grid().x`): groups of `step_output * output_vec_size` outputs.
    pub fn grid_x(&self) -> usize {
        (self.num_outputs / self.output_vec_size).div_ceil(self.step_output)
    }

    /// Inputs each thread reduces.
    pub fn values_per_thread(&self) -> usize {
        self.num_inputs.div_ceil(self.step_input)
    }

    /// Whether lanes of a warp share an output (a reduction across x).
    pub fn should_block_x_reduce(&self) -> bool {
        self.input_mult[0] != 0
    }

    /// Whether blocks share an output through global memory.
    pub fn should_global_reduce(&self) -> bool {
        self.input_mult[2] != 0
    }

    /// Bytes of the staging buffer (`global_memory_size`).
    pub fn global_memory_size(&self) -> usize {
        if !self.should_global_reduce() {
            return 0;
        }
        let size = self.element_size * self.num_outputs * self.ctas_per_output;
        if self.should_block_x_reduce() {
            size
        } else {
            size * self.block_width * self.output_vec_size
        }
    }

    /// Bytes of the semaphores (`semaphore_size`): one int per block column.
    pub fn semaphore_size(&self) -> usize {
        if self.should_global_reduce() {
            4 * self.grid_x()
        } else {
            0
        }
    }
}

/// floor(log2(n)) as a power of two, at least 1 (`last_pow2`).
fn last_pow2(n: usize) -> usize {
    if n == 0 {
        1
    } else {
        1 << (usize::BITS - 1 - n.leading_zeros())
    }
}

/// How many outputs one thread handles at once when lanes split the outputs
/// (`get_output_vec_size`): 4, halved until it divides the input's address (in elements), the
/// first output dim's size and every other input stride.
fn output_vec_size(iter: &ReduceIter, input_offset: usize) -> usize {
    let mut vec = 4;
    let mut update = |n: usize| {
        while !n.is_multiple_of(vec) {
            vec /= 2;
        }
    };
    update(input_offset);
    let out_dim = iter.num_reduce_dims();
    update(iter.shape[out_dim]);
    for (d, &st) in iter.input_strides.iter().enumerate() {
        if d != out_dim {
            update(st);
        }
    }
    vec
}

/// `setReduceConfig` for `iter`, whose input starts `input_offset` elements past an address
/// aligned for vector loads.
pub fn reduce_config(
    iter: &ReduceIter,
    traits: &KernelTraits,
    input_offset: usize,
    props: &DeviceProps,
) -> ReduceConfig {
    let num_outputs = iter.num_outputs();
    let mut c = ReduceConfig {
        element_size: traits.acc_size,
        num_inputs: iter.numel() / num_outputs.max(1),
        num_outputs,
        step_input: 1,
        step_output: 1,
        ctas_per_output: 1,
        input_mult: [0; 3],
        output_mult: [0; 2],
        block_width: 0,
        block_height: 0,
        num_threads: 0,
        vectorize_input: false,
        output_vec_size: 1,
    };
    let (ndim, nred) = (iter.shape.len(), iter.num_reduce_dims());
    let st = &iter.input_strides;
    // Block x goes along the fastest-moving input dim: the reduced one or the kept one.
    let (fastest_reduces, mut dim0, dim1, fastest_stride) = if ndim == 0 {
        (true, 1, 1, 1)
    } else if nred == ndim || st[0] < st[nred] {
        (true, c.num_inputs, num_outputs, st[0])
    } else {
        (false, num_outputs, c.num_inputs, st[nred])
    };
    if fastest_stride == 1 {
        if fastest_reduces && dim0 > 128 && nred == 1 && traits.vt0 >= traits.input_vec_size {
            c.vectorize_input = true;
            dim0 /= traits.input_vec_size;
        } else if !fastest_reduces {
            c.output_vec_size = output_vec_size(iter, input_offset);
            dim0 /= c.output_vec_size;
        }
    }
    c.set_block_dimension(dim0, dim1, traits, props.warp_size);
    let (bw, bh) = (c.block_width, c.block_height);
    if ndim == 0 || fastest_reduces {
        c.input_mult[0] = c.split_input(bw);
    } else {
        c.output_mult[0] = c.split_output(bw);
    }
    const MIN_VALUES_PER_THREAD: usize = 16;
    const MAX_VALUES_PER_THREAD: usize = 256;
    if c.values_per_thread() >= (bh * 16).min(MAX_VALUES_PER_THREAD) {
        c.input_mult[1] = c.split_input(bh);
    } else {
        c.output_mult[1] = c.split_output(bh);
    }
    let target_grid = props.sm_count * (props.max_threads_per_sm / c.num_threads);
    let grid = c.grid_x();
    let vpt = c.values_per_thread();
    if c.input_mult[1] != 0 && vpt >= MAX_VALUES_PER_THREAD && grid <= target_grid {
        // Enough blocks to fill the device, but each thread still reduces at least 16 values
        // and at most 256.
        let fill = target_grid.div_ceil(grid);
        let most = vpt.div_ceil(MIN_VALUES_PER_THREAD);
        let least = vpt.div_ceil(MAX_VALUES_PER_THREAD);
        c.ctas_per_output = fill.min(most).max(least);
        if c.ctas_per_output > 1 {
            c.input_mult[2] = c.split_input(c.ctas_per_output);
        }
    }
    c
}

/// What a reduction split across blocks takes besides its output, and how its blocks meet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Staging {
    /// Bytes of the staging buffer, allocated first.
    pub buffer_bytes: usize,
    /// Bytes of the semaphores (zeroed ints), allocated second and freed first.
    pub semaphore_bytes: usize,
    /// Bytes of one partial result (an accumulator).
    pub acc_size: usize,
    /// Outputs.
    pub num_outputs: usize,
    /// Blocks (partial results) per output.
    pub ctas_per_output: usize,
    /// Outputs that share one semaphore: a block column's `step_output * output_vec_size`.
    pub outputs_per_semaphore: usize,
}

impl Staging {
    /// Semaphores (one per block column).
    pub fn semaphores(&self) -> usize {
        self.semaphore_bytes / 4
    }
}

/// The staging PyTorch's CUDA reduction of `sizes`/`strides` (starting `offset` elements into
/// an aligned allocation) over `reduced` takes on a device with `props`, or `None` when its plan
/// keeps every output within one block (or it reduces nothing, or needs 64-bit indexing).
pub fn staging(
    sizes: &[usize],
    strides: &[usize],
    offset: usize,
    reduced: &[usize],
    traits: &KernelTraits,
    props: &DeviceProps,
) -> Option<Staging> {
    let iter = ReduceIter::new(sizes, strides, reduced);
    if iter.numel() == 0 || !iter.fits_32bit(traits.input_size, traits.acc_size) {
        return None;
    }
    let c = reduce_config(&iter, traits, offset, props);
    c.should_global_reduce().then(|| Staging {
        buffer_bytes: c.global_memory_size(),
        semaphore_bytes: c.semaphore_size(),
        acc_size: c.element_size,
        num_outputs: c.num_outputs,
        ctas_per_output: c.ctas_per_output,
        outputs_per_semaphore: c.step_output * c.output_vec_size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_sum() -> KernelTraits {
        KernelTraits::of(ReduceOp::Sum, DType::F32, false)
    }

    #[test]
    fn whole_sum_of_2_24_floats_takes_2112_and_4_bytes() {
        let s = staging(&[1 << 24], &[1], 0, &[0], &f32_sum(), &DeviceProps::H200).unwrap();
        assert_eq!((s.buffer_bytes, s.semaphore_bytes), (2112, 4));
        assert_eq!((s.ctas_per_output, s.outputs_per_semaphore), (528, 1));
    }

    #[test]
    fn column_sum_of_4096_squared_takes_128_mib_and_128_bytes() {
        let s = staging(
            &[4096, 4096],
            &[4096, 1],
            0,
            &[0],
            &f32_sum(),
            &DeviceProps::H200,
        )
        .unwrap();
        assert_eq!((s.buffer_bytes, s.semaphore_bytes), (134217728, 128));
        assert_eq!((s.ctas_per_output, s.outputs_per_semaphore), (64, 128));
    }

    #[test]
    fn row_sums_and_small_inputs_take_nothing() {
        let h = DeviceProps::H200;
        assert_eq!(
            staging(&[4096, 4096], &[4096, 1], 0, &[1], &f32_sum(), &h),
            None
        );
        assert_eq!(staging(&[4097], &[1], 0, &[0], &f32_sum(), &h), None);
        assert_eq!(staging(&[], &[], 0, &[], &f32_sum(), &h), None);
        assert_eq!(staging(&[0, 3], &[3, 1], 0, &[0], &f32_sum(), &h), None);
    }

    #[test]
    fn iterator_puts_reduced_dims_first_and_merges_runs() {
        let it = ReduceIter::new(&[2, 3, 4], &[12, 4, 1], &[0]);
        assert_eq!(it.shape, vec![2, 12]);
        assert_eq!(it.input_strides, vec![12, 1]);
        assert_eq!(it.num_reduce_dims(), 1);
        let all = ReduceIter::new(&[2, 3, 4], &[12, 4, 1], &[0, 1, 2]);
        assert_eq!((all.shape.clone(), all.num_reduce_dims()), (vec![24], 1));
    }

    #[test]
    fn last_pow2_rounds_down() {
        assert_eq!(
            [0, 1, 2, 3, 511, 512, 513].map(last_pow2),
            [1, 1, 2, 2, 256, 512, 512]
        );
    }
}
