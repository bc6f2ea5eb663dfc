//! The `dist` module: `torch.distributed` as one rank of a world, as the Python front end's is.
//!
//! torchlet runs one rank in one process: `dist::init_process_group("fake", #{rank, world_size})`
//! is that rank of that world, as PyTorch's fake process group runs it, and `nccl`/`gloo` run at
//! world size 1 (or as any rank under `torchlet fit --world-size N`). A collective moves no data;
//! what it allocates is what PyTorch's backend allocates on this rank: nothing, except NCCL's flat
//! staging tensor where the outputs are a list (`all_gather`).
use std::cell::RefCell;
use std::rc::Rc;

use rhai::{Array, Dynamic, Engine, Map, Module, INT};

use super::convert::{OrRaise, Res};
use super::documented::DocumentedModule;
use super::errors::{raise, type_error, value_error};
use torchlet_core::tensor::{Tensor, TensorOptions};

const BACKENDS: [&str; 3] = ["nccl", "gloo", "fake"];

/// The process group a session joined: its backend, this rank and the world's size.
#[derive(Clone, Debug)]
struct World {
    backend: String,
    rank: usize,
    size: usize,
}

/// The session's process group, shared by the module's functions.
type Group = Rc<RefCell<Option<World>>>;

fn env_number(name: &str) -> Res<Option<usize>> {
    match std::env::var(name) {
        Ok(text) => text.trim().parse().map(Some).map_err(|_| {
            value_error(format!(
                "the environment variable {name}={text:?} is not a whole number"
            ))
        }),
        Err(_) => Ok(None),
    }
}

fn option_number(options: &Map, key: &str) -> Res<Option<usize>> {
    let Some(value) = options.get(key) else {
        return Ok(None);
    };
    let n = value.as_int().map_err(|t| {
        type_error(format!(
            "dist::init_process_group: {key} must be an int, not {t}"
        ))
    })?;
    usize::try_from(n).map(Some).map_err(|_| {
        value_error(format!(
            "dist::init_process_group: {key} must be 0 or more, got {n}"
        ))
    })
}

/// The world `init_process_group(backend, options)` joins: `torchlet fit --world-size` first, then
/// the options, then torchrun's RANK and WORLD_SIZE, then rank 0 of 1.
fn world_of(backend: &str, options: &Map) -> Res<World> {
    if !BACKENDS.contains(&backend) {
        return Err(value_error(format!(
            "dist::init_process_group: torchlet runs the backends \"nccl\", \"gloo\" and \"fake\"; got {backend:?}"
        )));
    }
    if let Some(key) = options
        .keys()
        .find(|k| !matches!(k.as_str(), "rank" | "world_size"))
    {
        return Err(type_error(format!(
            "dist::init_process_group() got an unexpected option '{key}'; valid options: rank, world_size"
        )));
    }
    let fit = env_number("TORCHLET_WORLD_SIZE")?;
    let size = fit
        .or(option_number(options, "world_size")?)
        .or(env_number("WORLD_SIZE")?)
        .unwrap_or(1);
    let rank = match fit {
        Some(_) => env_number("TORCHLET_RANK")?,
        None => option_number(options, "rank")?.or(env_number("RANK")?),
    }
    .unwrap_or(0);
    if fit.is_none() && backend != "fake" && size != 1 {
        return Err(raise(
            "NotImplementedError",
            format!(
                "dist::init_process_group({backend:?}) at world size {size}: torchlet runs one process, so a \
                 real backend runs at world size 1 only; for one rank's memory in a larger world use the fake \
                 group, dist::init_process_group(\"fake\", #{{rank: 0, world_size: {size}}}), or ask \
                 torchlet fit FILE --world-size {size}, which runs any backend as one rank of {size}"
            ),
        ));
    }
    if rank >= size.max(1) || size == 0 {
        return Err(value_error(format!(
            "Invalid rank {rank}, rank should be in the interval [0, {}]",
            size.max(1) - 1
        )));
    }
    Ok(World {
        backend: backend.to_string(),
        rank,
        size,
    })
}

fn joined(group: &Group) -> Res<World> {
    group.borrow().clone().ok_or_else(|| {
        value_error(
            "Default process group has not been initialized, please make sure to call \
             dist::init_process_group(\"nccl\") (or \"fake\", #{rank, world_size}) first",
        )
    })
}

fn init(group: &Group, backend: &str, options: &Map) -> Res<()> {
    if group.borrow().is_some() {
        return Err(value_error(
            "trying to initialize the default process group twice!",
        ));
    }
    *group.borrow_mut() = Some(world_of(backend, options)?);
    Ok(())
}

fn tensor(what: &str, value: &Dynamic) -> Res<Tensor> {
    value
        .read_lock::<Tensor>()
        .map(|t| t.clone())
        .ok_or_else(|| {
            type_error(format!(
                "dist::{what}: expected a Tensor, got {}",
                value.type_name()
            ))
        })
}

/// Note [collectives' buffers]: ProcessGroupNCCL gathers into a list of tensors through one flat
/// tensor of the whole result, freed after the collective; other backends allocate nothing.
fn all_gather(group: &Group, list: &Array, input: &Dynamic) -> Res<()> {
    let world = joined(group)?;
    let input = tensor("all_gather", input)?;
    for (i, item) in list.iter().enumerate() {
        tensor(&format!("all_gather (output {i})"), item)?;
    }
    if world.backend == "nccl" && input.is_cuda() {
        let mut shape = vec![list.len()];
        shape.extend(input.shape());
        let options = TensorOptions::default()
            .dtype(input.dtype())
            .device(input.device());
        drop(Tensor::empty(&shape, &options).or_raise()?);
    }
    Ok(())
}

/// A collective that moves no data on this rank: it checks its tensors and the group.
fn collective(group: &Group, what: &str, tensors: &[&Dynamic]) -> Res<()> {
    joined(group)?;
    for t in tensors {
        tensor(what, t)?;
    }
    Ok(())
}

/// Register the `dist` module, with its process group kept for this engine's session.
pub(crate) fn register(engine: &mut Engine) {
    let group: Group = Rc::default();
    let mut m = Module::new();
    let g = group.clone();
    m.register_doc("init_process_group", &["dist::init_process_group(backend[, #{rank, world_size}]) — join the world as that rank (from RANK/WORLD_SIZE when not given): \"fake\" for one rank of any world, \"nccl\"/\"gloo\" at world size 1 or under fit --world-size"], move |backend: &str| init(&g, backend, &Map::new()));
    let g = group.clone();
    m.set_native_fn("init_process_group", move |backend: &str, options: Map| {
        init(&g, backend, &options)
    });
    let g = group.clone();
    m.register_doc(
        "is_initialized",
        &["dist::is_initialized() — whether init_process_group ran"],
        move || Ok(g.borrow().is_some()),
    );
    let g = group.clone();
    m.register_doc(
        "destroy_process_group",
        &["dist::destroy_process_group() — leave the world"],
        move || {
            g.borrow_mut().take();
            Ok(())
        },
    );
    let g = group.clone();
    m.register_doc(
        "get_rank",
        &["dist::get_rank() — this process's rank"],
        move || Ok(joined(&g)?.rank as INT),
    );
    let g = group.clone();
    m.register_doc(
        "get_world_size",
        &["dist::get_world_size() — how many ranks the world has"],
        move || Ok(joined(&g)?.size as INT),
    );
    let g = group.clone();
    m.register_doc(
        "get_backend",
        &["dist::get_backend() — the process group's backend"],
        move || Ok(joined(&g)?.backend),
    );
    let g = group.clone();
    m.register_doc(
        "barrier",
        &["dist::barrier() — wait for every rank (one rank here: at once)"],
        move || collective(&g, "barrier", &[]),
    );
    let g = group.clone();
    m.register_doc("all_reduce", &["dist::all_reduce(t) — in place, the sum over ranks; allocates nothing (one rank's memory)"], move |t: Dynamic| collective(&g, "all_reduce", &[&t]));
    let g = group.clone();
    m.register_doc(
        "broadcast",
        &["dist::broadcast(t, src) — in place, rank src's tensor; allocates nothing"],
        move |t: Dynamic, _src: INT| collective(&g, "broadcast", &[&t]),
    );
    let g = group.clone();
    m.register_doc("all_gather_into_tensor", &["dist::all_gather_into_tensor(out, t) — every rank's t, in out (world size × t); allocates nothing"], move |o: Dynamic, t: Dynamic| collective(&g, "all_gather_into_tensor", &[&o, &t]));
    let g = group.clone();
    m.register_doc("reduce_scatter_tensor", &["dist::reduce_scatter_tensor(out, t) — this rank's part of the sum of t over ranks, in out; allocates nothing"], move |o: Dynamic, t: Dynamic| collective(&g, "reduce_scatter_tensor", &[&o, &t]));
    let g = group;
    m.register_doc("all_gather", &["dist::all_gather(list, t) — every rank's t into the list's tensors; NCCL passes them through one flat tensor, freed when done"], move |list: Array, t: Dynamic| all_gather(&g, &list, &t));
    engine.register_static_module("dist", m.into());
}
