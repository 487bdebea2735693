//! `storsim report` and `simulate --report`/`--plots`: reading run documents, and writing the
//! page and the plot files that `storsim-report` renders.

use crate::args::ReportArgs;
use crate::CliError;
use serde_json::Value;
use std::path::Path;
use storsim_report::{Report, Run};

/// `storsim report RUN.json ... -o OUT.html [--plots DIR]`.
pub fn run(args: ReportArgs) -> Result<(), CliError> {
    let runs = args
        .runs
        .iter()
        .map(|path| Run::read(path).map_err(CliError::input))
        .collect::<Result<Vec<_>, _>>()?;
    write(
        &storsim_report::render(&runs),
        Some(&args.out),
        args.plots.as_deref(),
    )
}

/// `simulate --report`/`--plots`: the page of the document the run has just produced, named
/// `name` in the page's header (the JSON file it was also written to; empty for none).
pub fn write_simulation(
    name: &Path,
    doc: Value,
    out: Option<&Path>,
    plots: Option<&Path>,
) -> Result<(), CliError> {
    if out.is_none() && plots.is_none() {
        return Ok(());
    }
    // The document comes from this storsim, so refusing it would be a bug, not bad input.
    let run = Run::from_value(&name.display().to_string(), doc).map_err(CliError::failure)?;
    write(&storsim_report::render(&[run]), out, plots)
}

/// The error of writing `path`: outside the input, so a failure (exit 1).
fn written(path: &Path) -> impl Fn(std::io::Error) -> CliError + '_ {
    move |e| CliError::failure(format!("writing {}: {e}", path.display()))
}

/// `storsim sweep`'s page: the spec's plots from the results table and the points'
/// documents in `dir` (the output folder), written to `dir/report.html`, and each plot into
/// `plots` if given.
pub fn write_sweep(
    spec: &storsim_sweep::Spec,
    points: &[storsim_sweep::Point],
    table: &storsim_sweep::Table,
    dir: &Path,
    plots: Option<&Path>,
) -> Result<(), CliError> {
    // A document the sweep has just written or read back; one that no longer reads is left
    // out of the plots that need it rather than failing the page.
    let point = |row: usize| {
        let path = storsim_sweep::point_file(dir, points.get(row)?);
        Run::read(&path).ok()
    };
    let report =
        storsim_report::render_sweep(&spec.name, &spec.description, table, &spec.plots, &point);
    write(&report, Some(&dir.join("report.html")), plots)
}

fn write(report: &Report, out: Option<&Path>, plots: Option<&Path>) -> Result<(), CliError> {
    match out {
        Some(path) if path == Path::new("-") => print!("{}", report.html),
        Some(path) => std::fs::write(path, &report.html).map_err(written(path))?,
        None => {}
    }
    if let Some(dir) = plots {
        std::fs::create_dir_all(dir).map_err(written(dir))?;
        for plot in &report.plots {
            let svg = dir.join(format!("{}.svg", plot.id));
            std::fs::write(&svg, storsim_report::plot_svg(plot)).map_err(written(&svg))?;
            let png = dir.join(format!("{}.png", plot.id));
            let bytes = storsim_report::plot_png(plot).map_err(CliError::failure)?;
            std::fs::write(&png, bytes).map_err(written(&png))?;
        }
    }
    Ok(())
}
