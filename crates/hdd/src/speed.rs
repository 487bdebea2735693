//! A drive made uniformly faster (or slower): every mechanical and overhead time divided by one
//! factor, as the co-simulation thesis' disks 10× to 200× faster than a reference are. The
//! parameters are destructured whole, so a time added to them later fails to compile here
//! until it is given its place.

use crate::{
    ExtraWriteDisconnect, HddParams, HplCurve, Interface, Mechanics, Overheads, SeekCurve,
};

/// Divides a time in nanoseconds by `factor`, to the nearest nanosecond (the model's unit).
fn div(ns: u64, factor: f64) -> u64 {
    (ns as f64 / factor).round() as u64
}

impl HddParams {
    /// The same drive with every mechanical and overhead time divided by `factor` (> 0):
    /// the spindle turns `factor` times faster (so rotational latency and media transfer
    /// shrink with it, and the skews, counted in sectors, still hide the head and cylinder
    /// switches they did), and seeks, head switches, the write settle, every controller
    /// overhead and the bus transfer per sector take `1/factor` of their time, rounded to the
    /// nanosecond. Not scaled: the layout and the cache (sizes, not times), the queue and its
    /// scheduler, and the power states (their draw, the spin-up time and the idle time before
    /// standby, which are policies and events outside the drive's service of requests).
    pub fn faster_by(&self, factor: f64) -> HddParams {
        assert!(
            factor.is_finite() && factor > 0.0,
            "speed factor {factor} must be a positive number"
        );
        let HddParams {
            geometry,
            mechanics,
            overheads,
            interface,
            cache,
            queue_depth,
            scheduler,
            power,
        } = self.clone();
        HddParams {
            geometry,
            mechanics: mechanics_faster(mechanics, factor),
            overheads: overheads_faster(overheads, factor),
            interface: interface_faster(interface, factor),
            cache,
            queue_depth,
            scheduler,
            power,
        }
    }
}

fn mechanics_faster(m: Mechanics, f: f64) -> Mechanics {
    let Mechanics {
        rpm,
        head_switch_ns,
        write_settle_ns,
        seek,
    } = m;
    Mechanics {
        rpm: rpm * f,
        head_switch_ns: div(head_switch_ns, f),
        write_settle_ns: (write_settle_ns as f64 / f).round() as i64,
        seek: seek_faster(seek, f),
    }
}

fn hpl_faster(c: HplCurve, f: f64) -> HplCurve {
    let HplCurve {
        boundary_cylinders,
        a_ns,
        b_ns_per_sqrt_cylinder,
        c_ns,
        e_ns_per_cylinder,
        single_ns,
    } = c;
    HplCurve {
        boundary_cylinders,
        a_ns: a_ns / f,
        b_ns_per_sqrt_cylinder: b_ns_per_sqrt_cylinder / f,
        c_ns: c_ns / f,
        e_ns_per_cylinder: e_ns_per_cylinder / f,
        single_ns: single_ns.map(|t| div(t, f)),
    }
}

fn seek_faster(s: SeekCurve, f: f64) -> SeekCurve {
    match s {
        SeekCurve::Constant { time_ns } => SeekCurve::Constant {
            time_ns: div(time_ns, f),
        },
        SeekCurve::ThreePointLine {
            single_ns,
            average_ns,
            full_ns,
        } => SeekCurve::ThreePointLine {
            single_ns: div(single_ns, f),
            average_ns: div(average_ns, f),
            full_ns: div(full_ns, f),
        },
        SeekCurve::ThreePointCurve {
            single_ns,
            average_ns,
            full_ns,
        } => SeekCurve::ThreePointCurve {
            single_ns: div(single_ns, f),
            average_ns: div(average_ns, f),
            full_ns: div(full_ns, f),
        },
        SeekCurve::Hpl(c) => SeekCurve::Hpl(hpl_faster(c, f)),
        SeekCurve::HplPlus10 {
            curve,
            first_ten_ns,
        } => SeekCurve::HplPlus10 {
            curve: hpl_faster(curve, f),
            first_ten_ns: first_ten_ns.map(|t| div(t, f)),
        },
        SeekCurve::Extracted { points } => SeekCurve::Extracted {
            points: points.into_iter().map(|(d, t)| (d, div(t, f))).collect(),
        },
    }
}

fn overheads_faster(o: Overheads, f: f64) -> Overheads {
    let Overheads {
        per_request_ns,
        read_hit_after_read_ns,
        read_hit_after_write_ns,
        read_miss_after_read_ns,
        read_miss_after_write_ns,
        write_hit_after_read_ns,
        write_hit_after_write_ns,
        write_miss_after_read_ns,
        write_miss_after_write_ns,
        read_completion_ns,
        write_completion_ns,
        data_preparation_ns,
        first_reselect_ns,
        other_reselect_ns,
        read_disconnect_after_read_ns,
        read_disconnect_after_write_ns,
        write_disconnect_ns,
        minimum_seek_ns,
        extra_write_disconnect,
    } = o;
    Overheads {
        per_request_ns: div(per_request_ns, f),
        read_hit_after_read_ns: div(read_hit_after_read_ns, f),
        read_hit_after_write_ns: div(read_hit_after_write_ns, f),
        read_miss_after_read_ns: div(read_miss_after_read_ns, f),
        read_miss_after_write_ns: div(read_miss_after_write_ns, f),
        write_hit_after_read_ns: div(write_hit_after_read_ns, f),
        write_hit_after_write_ns: div(write_hit_after_write_ns, f),
        write_miss_after_read_ns: div(write_miss_after_read_ns, f),
        write_miss_after_write_ns: div(write_miss_after_write_ns, f),
        read_completion_ns: div(read_completion_ns, f),
        write_completion_ns: div(write_completion_ns, f),
        data_preparation_ns: div(data_preparation_ns, f),
        first_reselect_ns: div(first_reselect_ns, f),
        other_reselect_ns: div(other_reselect_ns, f),
        read_disconnect_after_read_ns: div(read_disconnect_after_read_ns, f),
        read_disconnect_after_write_ns: div(read_disconnect_after_write_ns, f),
        write_disconnect_ns: div(write_disconnect_ns, f),
        minimum_seek_ns: div(minimum_seek_ns, f),
        extra_write_disconnect: extra_write_disconnect.map(|x| {
            let ExtraWriteDisconnect {
                command_ns,
                disconnect_ns,
                inter_disconnect_ns,
                second_disconnect_ns,
                seek_delta_ns,
            } = x;
            ExtraWriteDisconnect {
                command_ns: div(command_ns, f),
                disconnect_ns: div(disconnect_ns, f),
                inter_disconnect_ns: div(inter_disconnect_ns, f),
                second_disconnect_ns: div(second_disconnect_ns, f),
                seek_delta_ns: div(seek_delta_ns, f),
            }
        }),
    }
}

fn interface_faster(i: Interface, f: f64) -> Interface {
    let Interface {
        read_transfer_ns_per_sector,
        write_transfer_ns_per_sector,
    } = i;
    Interface {
        read_transfer_ns_per_sector: div(read_transfer_ns_per_sector, f),
        write_transfer_ns_per_sector: div(write_transfer_ns_per_sector, f),
    }
}
