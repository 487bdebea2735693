//! The plots of an SSD's wear: each flash unit's histogram of erase counts per block and its
//! wear spread (blocks sorted by erase count).

use super::{line, Plots};
use crate::chart::{self, Axis, Histogram, Legend, Style, XyChart};
use serde_json::Value;

/// One flash unit's wear from `device.block_wear[]`: its name (empty for the device itself)
/// and every block's erase count, least erased first.
pub(crate) struct BlockWear {
    pub unit: String,
    pub counts: Vec<f64>,
}

impl BlockWear {
    /// Every unit of a `device.block_wear` array that has erase counts to draw.
    pub(crate) fn of(wear: &Value) -> Vec<BlockWear> {
        let Some(arrays) = wear.as_array() else {
            return Vec::new();
        };
        arrays
            .iter()
            .filter_map(|w| {
                let counts = w.get("erase_counts_per_block")?.as_array()?;
                // Erase counts are u32 in every document storsim writes; anything else is
                // not drawn.
                let mut counts: Vec<f64> = counts
                    .iter()
                    .filter_map(Value::as_u64)
                    .filter(|&c| c <= u64::from(u32::MAX))
                    .map(|c| c as f64)
                    .collect();
                if counts.is_empty() {
                    return None;
                }
                counts.sort_by(f64::total_cmp);
                let unit = w.get("unit").and_then(Value::as_str).unwrap_or("");
                Some(BlockWear {
                    unit: unit.to_string(),
                    counts,
                })
            })
            .collect()
    }

    /// The unit's part of a plot id: `-<unit>` with dots as dashes, nothing for the device.
    pub(crate) fn tag(&self) -> String {
        if self.unit.is_empty() {
            String::new()
        } else {
            format!("-{}", self.unit.replace('.', "-"))
        }
    }

    /// The unit's part of a plot title: ` (<unit>)`, nothing for the device.
    pub(crate) fn title_unit(&self) -> String {
        if self.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.unit)
        }
    }

    /// The least and greatest erase count.
    pub(crate) fn span(&self) -> (f64, f64) {
        (self.counts[0], self.counts[self.counts.len() - 1])
    }

    /// The histogram of the erase counts, titled `title`, over `span` (the unit's own
    /// [`BlockWear::span`], or one holding it that histograms to be compared share): one
    /// bin per erase count when few, otherwise 50 equal bins.
    pub(crate) fn histogram(&self, title: String, span: (f64, f64)) -> Histogram {
        let counts = &self.counts;
        let (lo, hi) = span;
        // Bins centred on the counts they hold, so that a bar stands over its count.
        let width = if hi - lo < 60.0 {
            1.0
        } else {
            ((hi - lo + 1.0) / 50.0).ceil()
        };
        let bins_n = ((hi - lo) / width).floor() as usize + 1;
        let first = lo - width / 2.0;
        let mut bins: Vec<(f64, f64, f64)> = (0..bins_n)
            .map(|i| {
                (
                    first + i as f64 * width,
                    first + (i + 1) as f64 * width,
                    0.0,
                )
            })
            .collect();
        for c in counts {
            let i = (((c - lo) / width).floor() as usize).min(bins_n - 1);
            bins[i].2 += 1.0;
        }
        Histogram {
            title,
            x_title: "erases of the block".into(),
            y_title: "blocks".into(),
            bins,
            colour: 0,
        }
    }
}

/// Each flash unit's erase-count histogram and wear spread.
pub(super) fn block_wear(plots: &mut Plots, wear: &Value) {
    for w in BlockWear::of(wear) {
        let (tag, title_unit) = (w.tag(), w.title_unit());
        let title = format!("Erase counts per block{title_unit}");
        let svg = chart::histogram(&w.histogram(title.clone(), w.span()));
        plots.push(
            &format!("erase-histogram{tag}"),
            &title,
            "device.block_wear[].erase_counts_per_block",
            svg,
        );
        // The wear spread: blocks sorted by erase count, at most 400 points.
        let counts = &w.counts;
        let n = counts.len();
        let hi = counts[n - 1];
        let step = n.div_ceil(400).max(1);
        let mut points: Vec<(f64, f64)> = (0..n)
            .step_by(step)
            .map(|i| (100.0 * i as f64 / n as f64, counts[i]))
            .collect();
        points.push((100.0, hi));
        let mean = counts.iter().sum::<f64>() / n as f64;
        plots.xy(
            &format!("wear-spread{tag}"),
            "device.block_wear[].erase_counts_per_block, sorted",
            XyChart {
                title: format!("Wear spread: blocks by erase count{title_unit}"),
                x: Axis::linear("blocks, least erased first (%)"),
                y: Axis::linear("erases"),
                lines: vec![
                    line("erase count", points, 0, Style::Solid),
                    line("mean", vec![(0.0, mean), (100.0, mean)], 3, Style::Dashed),
                ],
                legend: Legend::UpperLeft,
            },
        );
    }
}
