//! The `cuda` module and the top-level memory functions, on the simulated GPU (or the real one with
//! TORCHLET_TEST_DEVICE=cuda).
use crate::common;
use common::exclusive;
use common::figures::{SEGMENT, TWO_X, X};
use torchlet_session::Session;

#[test]
fn availability_and_names() {
    let _g = exclusive();
    let (mut s, _) = Session::captured("<test>");
    assert!(common::dynamic(&mut s, "cuda::is_available()")
        .as_bool()
        .unwrap());
    assert!(common::int(&mut s, "cuda::device_count()") >= 1);
    assert_eq!(common::int(&mut s, "cuda::current_device()"), 0);
    let name = common::dynamic(&mut s, "cuda::get_device_name()").to_string();
    if !common::real_gpu() {
        assert!(name.contains("simulated"), "{name}");
        assert_eq!(common::int(&mut s, "cuda::mem_get_info()[1]"), 16 << 30);
    }
    assert_eq!(
        name,
        common::dynamic(&mut s, "cuda::get_device_name(\"cuda:0\")").to_string()
    );
    assert!(common::dynamic(&mut s, "cuda::synchronize(); true")
        .as_bool()
        .unwrap());
}

#[test]
fn every_spelling_of_the_device_reads_the_same_figure() {
    let _g = exclusive();
    let (mut s, _) = Session::captured("<test>");
    common::run(&mut s, "let x = randn(1000, 1000, #{device: \"cuda\"});");
    let figure = common::int(&mut s, "memory_allocated()");
    assert!(figure >= X as i64);
    for spelling in [
        "cuda::memory_allocated()",
        "cuda::memory_allocated(0)",
        "cuda::memory_allocated(\"cuda\")",
        "cuda::memory_allocated(\"cuda:0\")",
        "cuda::memory_allocated(x.device)",
        "cuda::memory_stats()[\"allocated_bytes.all.current\"]",
    ] {
        assert_eq!(common::int(&mut s, spelling), figure, "{spelling}");
    }
    assert_eq!(
        common::int(&mut s, "memory_reserved()"),
        common::int(
            &mut s,
            "cuda::memory_stats(0)[\"reserved_bytes.all.current\"]"
        )
    );
}

#[test]
fn the_article_numbers_in_one_session() {
    let _g = exclusive();
    let (mut s, _) = Session::captured("<test>");
    common::run(&mut s, "empty_cache(); cuda::reset_peak_memory_stats();");
    assert_eq!(
        common::int(&mut s, "memory_allocated()"),
        0,
        "no other test holds GPU memory now"
    );
    assert_eq!(common::int(&mut s, "memory_reserved()"), 0);
    common::run(
        &mut s,
        "let x = randn(1000, 1000).cuda(); let temp = x * 2;",
    );
    assert_eq!(common::int(&mut s, "memory_allocated()"), TWO_X as i64);
    assert_eq!(common::int(&mut s, "memory_reserved()"), SEGMENT as i64);
    common::run(&mut s, "del temp; empty_cache();");
    assert_eq!(common::int(&mut s, "memory_allocated()"), X as i64);
    assert_eq!(
        common::int(&mut s, "memory_reserved()"),
        SEGMENT as i64,
        "x keeps its segment split"
    );
    assert_eq!(common::int(&mut s, "max_memory_allocated()"), TWO_X as i64);
    assert_eq!(
        common::int(&mut s, "cuda::max_memory_reserved()"),
        SEGMENT as i64
    );
    common::run(&mut s, "cuda::reset_peak_memory_stats();");
    assert_eq!(
        common::int(&mut s, "cuda::max_memory_allocated()"),
        X as i64
    );
    common::run(&mut s, "del x; cuda::empty_cache();");
    assert_eq!(common::int(&mut s, "memory_reserved()"), 0);
}

#[test]
fn summary_stats_and_snapshot() {
    let _g = exclusive();
    let (mut s, _) = Session::captured("<test>");
    common::run(&mut s, "let x = ones(300, 300, #{device: \"cuda\"});");
    let full = common::dynamic(&mut s, "memory_summary()").to_string();
    let short = common::dynamic(
        &mut s,
        "cuda::memory_summary(#{device: 0, abbreviated: true})",
    )
    .to_string();
    assert!(
        full.contains("torchlet CUDA memory summary, device ID 0"),
        "{full}"
    );
    assert!(short.lines().count() < full.lines().count());
    let stats = common::dynamic(&mut s, "cuda::memory_stats()").cast::<rhai::Map>();
    assert!(stats.len() >= 100, "PyTorch's flat keys: {}", stats.len());
    let snapshot = common::dynamic(&mut s, "cuda::memory_snapshot()");
    assert!(snapshot.is_map(), "{}", snapshot.type_name());
    common::run(
        &mut s,
        "cuda::record_memory_history(\"all\", 100); cuda::record_memory_history(());",
    );
    common::run(&mut s, "cuda::reset_accumulated_memory_stats();");
}

#[test]
fn bad_device_arguments_say_what_is_wrong() {
    let _g = exclusive();
    let (mut s, _) = Session::captured("<test>");
    let e = s.execute("cuda::memory_allocated(\"cpu\")").error.unwrap();
    assert_eq!(e.kind, "ValueError");
    assert!(e.message.contains("cuda device"), "{}", e.message);
    let e = s.execute("cuda::memory_allocated(7)").error.unwrap();
    assert!(e.message.contains('7'), "{}", e.message);
    let e = s.execute("cuda::memory_allocated(\"gpu\")").error.unwrap();
    assert!(!e.message.is_empty());
    let e = s
        .execute("cuda::record_memory_history(\"sometimes\")")
        .error
        .unwrap();
    assert_eq!(e.kind, "ValueError");
    let e = s
        .execute("cuda::set_per_process_memory_fraction(1.5)")
        .error
        .unwrap();
    assert_eq!(e.kind, "ValueError");
    assert_eq!(
        s.execute("cuda::nonsense()").error.unwrap().kind,
        "NameError"
    );
}
