//! Allocator settings: PyTorch's syntax, every key, and errors that name the key.

use torchlet_alloc::{AllocConfig, CachingAllocator, DeviceAllocator, SimulatedMemory};

const MIB: usize = 1 << 20;

#[test]
fn defaults() {
    let c = AllocConfig::parse("").unwrap();
    assert_eq!(c, AllocConfig::default());
    assert_eq!(c.max_split_size(), usize::MAX);
    assert_eq!(c.max_non_split_rounding(), 20 * MIB);
    assert_eq!(c.roundup_power2_divisions(), [0; 16]);
    assert_eq!(c.garbage_collection_threshold(), 0.0);
    assert!(!c.expandable_segments());
}

#[test]
fn every_key_parses() {
    let c = AllocConfig::parse(
        " max_split_size_mb : 128 , garbage_collection_threshold:0.6,expandable_segments:True,\
         max_non_split_rounding_mb:40,backend:native,release_lock_on_cudamalloc:False",
    )
    .unwrap();
    assert_eq!(c.max_split_size(), 128 * MIB);
    assert_eq!(c.max_non_split_rounding(), 40 * MIB);
    assert_eq!(c.garbage_collection_threshold(), 0.6);
    assert!(c.expandable_segments());
    assert!(c.settings().contains("max_split_size_mb"));
    // The smallest max_split_size allowed is 20 MiB.
    assert_eq!(
        AllocConfig::parse("max_split_size_mb:20")
            .unwrap()
            .max_split_size(),
        20 * MIB
    );
}

#[test]
fn roundup_power2_divisions_single_and_list_forms() {
    assert_eq!(
        AllocConfig::parse("roundup_power2_divisions:8")
            .unwrap()
            .roundup_power2_divisions(),
        [8; 16]
    );
    let c = AllocConfig::parse("roundup_power2_divisions:[64:8,256:4,1024:2,>:1]").unwrap();
    let d = c.roundup_power2_divisions();
    // The first key also fills all smaller intervals; '>' fills every later one.
    assert_eq!(&d[..7], &[8; 7]);
    assert_eq!(d[7], 0);
    assert_eq!(d[8], 4);
    assert_eq!(d[10], 2);
    assert_eq!(&d[11..], &[1; 5]);
    // 0 disables rounding in the list form.
    let c = AllocConfig::parse("roundup_power2_divisions:[1:0,2:4]").unwrap();
    assert_eq!(&c.roundup_power2_divisions()[..3], &[0, 4, 0]);
    assert_eq!(c.round_size(3 * MIB + 1), 3 * MIB + 512 * 1024);
}

#[test]
fn malformed_settings_name_the_key() {
    let cases = [
        ("max_split_size_mb:19", "max_split_size_mb", "too small"),
        (
            "max_split_size_mb:lots",
            "max_split_size_mb",
            "whole number",
        ),
        ("max_split_size_mb", "max_split_size_mb", "expected ':'"),
        ("max_split_size_mb:", "max_split_size_mb", "missing value"),
        (
            "garbage_collection_threshold:1.0",
            "garbage_collection_threshold",
            "out of range",
        ),
        (
            "garbage_collection_threshold:0",
            "garbage_collection_threshold",
            "out of range",
        ),
        (
            "garbage_collection_threshold:half",
            "garbage_collection_threshold",
            "between 0 and 1",
        ),
        (
            "expandable_segments:true",
            "expandable_segments",
            "True or False",
        ),
        (
            "roundup_power2_divisions:3",
            "roundup_power2_divisions",
            "power of 2",
        ),
        (
            "roundup_power2_divisions:0",
            "roundup_power2_divisions",
            "power of 2",
        ),
        (
            "roundup_power2_divisions:[3:4]",
            "roundup_power2_divisions",
            "interval start",
        ),
        (
            "roundup_power2_divisions:[64:8",
            "roundup_power2_divisions",
            "']'",
        ),
        (
            "roundup_power2_divisions:[64:6]",
            "roundup_power2_divisions",
            "power of 2 or 0",
        ),
        ("backend:cudaMallocAsync", "backend", "not supported"),
        (
            "max_split_size_mb:128 expandable_segments:True",
            "max_split_size_mb",
            "whole number",
        ),
        (
            "expandable_segments:True:False",
            "expandable_segments",
            "expected ','",
        ),
        (
            "max_split_sizes_mb:128",
            "max_split_sizes_mb",
            "unrecognized key",
        ),
    ];
    for (text, key, what) in cases {
        let e = AllocConfig::parse(text).unwrap_err().to_string();
        assert!(
            e.contains(&format!("'{key}'")) && e.contains(what),
            "{text:?} gave {e:?}"
        );
    }
}

#[test]
fn the_torchlet_variable_wins_over_the_pytorch_alias() {
    // Read from a map rather than the environment: the process's other tests read it meanwhile.
    let vars = |pairs: &[(&str, &str)]| {
        let map: std::collections::HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |var: &str| map.get(var).cloned()
    };
    let alias = [("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:64")];
    let c = AllocConfig::from_vars(vars(&alias)).unwrap();
    assert_eq!(c.max_split_size(), 64 * MIB);
    let both = [
        alias[0],
        ("TORCHLET_CUDA_ALLOC_CONF", "expandable_segments:True"),
    ];
    let c = AllocConfig::from_vars(vars(&both)).unwrap();
    assert!(c.expandable_segments());
    assert_eq!(
        c.max_split_size(),
        usize::MAX,
        "the torchlet variable wins outright"
    );
    let bad = [("TORCHLET_CUDA_ALLOC_CONF", "expandable_segments:yes")];
    let e = AllocConfig::from_vars(vars(&bad)).unwrap_err().to_string();
    assert!(
        e.starts_with("TORCHLET_CUDA_ALLOC_CONF=\"expandable_segments:yes\": "),
        "{e}"
    );
    assert_eq!(
        AllocConfig::from_vars(vars(&[])).unwrap(),
        AllocConfig::default()
    );
}

#[test]
fn settings_change_at_run_time_and_errors_change_nothing() {
    let a = CachingAllocator::new(0, SimulatedMemory::default(), AllocConfig::default());
    a.set_allocator_settings("max_split_size_mb:64").unwrap();
    assert_eq!(a.memory_stats()["max_split_size"], 64 << 20);
    assert!(a
        .set_allocator_settings("garbage_collection_threshold:2")
        .is_err());
    a.set_allocator_settings("roundup_power2_divisions:4")
        .unwrap();
    let c = a.config();
    assert_eq!(
        c.max_split_size(),
        64 * MIB,
        "keys not named keep their value"
    );
    assert_eq!(c.roundup_power2_divisions(), [4; 16]);
    assert_eq!(
        a.snapshot().allocator_settings.conf,
        "roundup_power2_divisions:4"
    );
}
