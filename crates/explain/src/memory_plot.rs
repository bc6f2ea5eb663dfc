//! Drawing a [`Timeline`]: an SVG chart (plotters) of allocated bytes stacked by variable, reserved
//! and capacity as lines, segments created and released marked; and a one-line text sparkline.
use plotters::prelude::*;

use crate::memory_timeline::Timeline;
use torchlet_alloc::format_size;

const MIB: f64 = 1024.0 * 1024.0;
const COLORS: [RGBColor; 10] = [
    RGBColor(78, 121, 167),
    RGBColor(242, 142, 43),
    RGBColor(89, 161, 79),
    RGBColor(225, 87, 89),
    RGBColor(118, 183, 178),
    RGBColor(237, 201, 72),
    RGBColor(176, 122, 161),
    RGBColor(255, 157, 167),
    RGBColor(156, 117, 95),
    RGBColor(186, 176, 172),
];

/// The chart's drawing size; the document scales to whatever shows it (see [`scalable`]).
const SIZE: (u32, u32) = (960, 480);

/// The chart as an SVG document.
pub fn svg(t: &Timeline) -> Result<String, String> {
    let mut out = String::new();
    draw(t, &mut out).map_err(|e| format!("plot_memory: cannot draw the chart: {e}"))?;
    Ok(scalable(&out))
}

/// The document with a `viewBox` and no fixed size, so it fills the width of a notebook's
/// output area (a fixed 960 px lost its right end, the newest statements, beside a sidebar).
fn scalable(svg: &str) -> String {
    let (w, h) = SIZE;
    let fixed = format!("width=\"{w}\" height=\"{h}\"");
    let scaled = "width=\"100%\" preserveAspectRatio=\"xMinYMin meet\"";
    let svg = svg.replacen(&fixed, scaled, 1);
    if svg.contains("viewBox") {
        return svg;
    }
    svg.replacen("<svg ", &format!("<svg viewBox=\"0 0 {w} {h}\" "), 1)
}

fn totals(t: &Timeline) -> Vec<u64> {
    t.steps.iter().map(|s| s.by_variable.iter().sum()).collect()
}

fn draw(t: &Timeline, out: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let peak_reserved = t.steps.iter().map(|s| s.reserved).max().unwrap_or(0);
    let peak = peak_reserved
        .max(totals(t).into_iter().max().unwrap_or(0))
        .max(1);
    // A capacity far above the peak would flatten everything else: then it is named, not drawn.
    let capacity_fits = t.capacity > 0 && t.capacity <= peak.saturating_mul(2);
    let top = if capacity_fits { t.capacity } else { peak } as f64 * 1.08 / MIB;
    let caption = if capacity_fits || t.capacity == 0 {
        format!("GPU memory of cuda:{} by statement", t.device)
    } else {
        let cap = format_size(t.capacity);
        format!(
            "GPU memory of cuda:{} by statement (capacity {cap}, above the chart)",
            t.device
        )
    };
    let root = SVGBackend::with_string(out, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    // One statement run would be a single point, an area with no width: draw it one step wide.
    let n = t.steps.len().max(2) as f64 - 1.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..n, 0f64..top)?;
    let label = |x: &f64| {
        t.steps
            .get(x.round() as usize)
            .map_or(String::new(), |s| s.label.clone())
    };
    chart
        .configure_mesh()
        .x_desc("statement run (cell and line)")
        .y_desc("MiB")
        .x_label_formatter(&label)
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    stack(t, &mut chart)?;
    lines(t, &mut chart, capacity_fits)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// One band per variable: each drawn from zero to its running sum, topmost first, so lower bands cover it.
fn stack(t: &Timeline, chart: &mut Chart) -> Result<(), Box<dyn std::error::Error>> {
    for v in (0..t.variables.len()).rev() {
        let mut points: Vec<(f64, f64)> = t
            .steps
            .iter()
            .enumerate()
            .map(|(x, s)| {
                (
                    x as f64,
                    s.by_variable[..=v].iter().sum::<u64>() as f64 / MIB,
                )
            })
            .collect();
        if let [(_, only)] = points[..] {
            points.push((1.0, only));
        }
        let color = COLORS[v % COLORS.len()];
        chart
            .draw_series(AreaSeries::new(points, 0.0, color.mix(0.75)).border_style(color))?
            .label(&t.variables[v])
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    Ok(())
}

/// Reserved (and capacity, when it fits) as lines; segment creation and release as markers on reserved.
fn lines(
    t: &Timeline,
    chart: &mut Chart,
    capacity: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let reserved = |x: usize| t.steps[x].reserved as f64 / MIB;
    let mut line: Vec<(f64, f64)> = (0..t.steps.len())
        .map(|x| (x as f64, reserved(x)))
        .collect();
    if let [(_, only)] = line[..] {
        line.push((1.0, only));
    }
    chart
        .draw_series(LineSeries::new(line, BLACK.stroke_width(2)))?
        .label("reserved")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], BLACK.stroke_width(2)));
    if capacity {
        let c = t.capacity as f64 / MIB;
        let end = t.steps.len().max(2) as f64 - 1.0;
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, c), (end, c)],
                RED.stroke_width(2),
            ))?
            .label("capacity")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], RED.stroke_width(2)));
    }
    let marks = |pick: fn(&crate::memory_timeline::Step) -> u32| {
        (0..t.steps.len()).filter(move |&x| pick(&t.steps[x]) > 0)
    };
    let green = RGBColor(20, 140, 60);
    chart
        .draw_series(
            marks(|s| s.created)
                .map(|x| TriangleMarker::new((x as f64, reserved(x)), 6, green.filled())),
        )?
        .label("segment created")
        .legend(move |(x, y)| TriangleMarker::new((x + 6, y), 6, green.filled()));
    chart
        .draw_series(
            marks(|s| s.released)
                .map(|x| Cross::new((x as f64, reserved(x)), 5, RED.stroke_width(2))),
        )?
        .label("segment released")
        .legend(|(x, y)| Cross::new((x + 6, y), 5, RED.stroke_width(2)));
    Ok(())
}

/// `▁▂▃▅▇`: one character per value, scaled to the largest.
pub fn sparkline(values: &[u64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let top = values.iter().copied().max().unwrap_or(0).max(1);
    values
        .iter()
        .map(|&v| BARS[((v as u128 * 7 + top as u128 / 2) / top as u128) as usize])
        .collect()
}

/// The chart's text form: its peaks and a sparkline of allocated bytes (at most `width` characters).
pub fn text(t: &Timeline, width: usize) -> String {
    let totals = totals(t);
    let chunk = totals.len().div_ceil(width.max(1)).max(1);
    let sampled: Vec<u64> = totals
        .chunks(chunk)
        .map(|c| c.iter().copied().max().unwrap_or(0))
        .collect();
    let peak_reserved = t.steps.iter().map(|s| s.reserved).max().unwrap_or(0);
    format!(
        "cuda:{} over {} statement runs: allocated {} (peak {}), reserved peak {}; variables: {}",
        t.device,
        t.steps.len(),
        sparkline(&sampled),
        format_size(totals.iter().copied().max().unwrap_or(0)),
        format_size(peak_reserved),
        t.variables.join(", ")
    )
}
