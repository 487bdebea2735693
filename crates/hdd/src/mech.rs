//! Exact rotational position. The platters turn at a constant rate from angle zero at time
//! zero, so the angle under the heads is a function of the instant alone; a repositioning
//! ends at some angle and the wanted sector arrives when the platter has turned to its start.
//! This follows DiskSim's g1 mechanics: a move costs the larger of the seek and the head
//! switch, plus the write settle for writes, and a transfer costs one sector width per sector.

use crate::float::{ceil, floor};
use crate::layout::{Layout, Pbn};
use crate::params::{Mechanics, SeekCurve};
use crate::seek::{seek_ns, three_point_curve, three_point_curve_coefficients};

/// Fractions of a revolution closer than this to a full turn count as no wait at all: they
/// are rounding left over from the previous sector's end.
const ANGLE_EPSILON: f64 = 1e-9;

/// Drives with at most this many cylinders keep their seek time for every distance in a
/// table (8 bytes a cylinder, 256 KiB at most, which stays in a core's second-level cache);
/// larger ones compute each seek, which costs less than a load from further away.
const SEEK_TABLE_MAX_CYLINDERS: u32 = 1 << 15;

/// How [`Mech::seek_time_ns`] finds a seek time, always the value [`seek_ns`] gives.
#[derive(Clone, Debug)]
enum SeekTimes {
    /// `seek_ns(seek, d, cylinders)` for every distance d the arm can move, computed once:
    /// SPTF prices every queued request for each decision, and the curves cost a binary
    /// search (extracted, HPL with its short table) or a square root.
    Table(Vec<f64>),
    /// The three-point curve's coefficients, which [`seek_ns`] would solve for at every
    /// call.
    ThreePointCurve((f64, f64, f64)),
    /// Computed at every call.
    Curve,
}

#[derive(Clone, Debug)]
pub struct Mech {
    pub layout: Layout,
    pub period_ns: f64,
    head_switch_ns: f64,
    write_settle_ns: f64,
    seek: SeekCurve,
    seek_times: SeekTimes,
}

impl Mech {
    pub fn new(layout: Layout, m: &Mechanics) -> Mech {
        let cylinders = layout.cylinders();
        let seek_times = match m.seek {
            SeekCurve::ThreePointCurve {
                single_ns,
                average_ns,
                full_ns,
            } => SeekTimes::ThreePointCurve(three_point_curve_coefficients(
                single_ns as f64,
                average_ns as f64,
                full_ns as f64,
                cylinders,
            )),
            _ if cylinders <= SEEK_TABLE_MAX_CYLINDERS => SeekTimes::Table(
                (0..cylinders)
                    .map(|d| seek_ns(&m.seek, d, cylinders))
                    .collect(),
            ),
            _ => SeekTimes::Curve,
        };
        Mech {
            layout,
            period_ns: 60.0e9 / m.rpm,
            head_switch_ns: m.head_switch_ns as f64,
            write_settle_ns: m.write_settle_ns as f64,
            seek: m.seek.clone(),
            seek_times,
        }
    }

    /// The seek time for a move of `distance` cylinders: `seek_ns` for the drive's curve.
    pub fn seek_time_ns(&self, distance: u32) -> f64 {
        match &self.seek_times {
            SeekTimes::Table(t) => match t.get(distance as usize) {
                Some(&t) => t,
                None => seek_ns(&self.seek, distance, self.layout.cylinders()),
            },
            // As `seek_ns` computes it, from the same coefficients.
            SeekTimes::ThreePointCurve(k) => {
                if distance == 0 {
                    0.0
                } else {
                    three_point_curve(*k, distance).max(0.0)
                }
            }
            SeekTimes::Curve => seek_ns(&self.seek, distance, self.layout.cylinders()),
        }
    }

    /// The angle under the heads at instant `t_ns`, as a fraction of a revolution.
    pub fn angle_at(&self, t_ns: f64) -> f64 {
        let turns = t_ns / self.period_ns;
        turns - floor(turns)
    }

    /// Time to move from one track to another: the seek or the head switch, whichever is
    /// longer, plus the write settle before a write (never below zero).
    pub fn reposition_ns(&self, from: (u32, u32), to: (u32, u32), write: bool) -> f64 {
        let seek = self.seek_time_ns(from.0.abs_diff(to.0));
        let switch = if from.1 != to.1 {
            self.head_switch_ns
        } else {
            0.0
        };
        let mut t = seek.max(switch);
        if t > 0.0 && write {
            t = (t + self.write_settle_ns).max(0.0);
        }
        t
    }

    /// How long after `t_ns` the start of sector `p` passes under the heads.
    pub fn latency_ns(&self, t_ns: f64, p: Pbn) -> f64 {
        self.latency_to_angle_ns(t_ns, self.layout.sector_angle(p))
    }

    /// How long after `t_ns` the platter turns to `angle` (a sector's start, as
    /// [`Layout::sector_angle`] gives it).
    pub fn latency_to_angle_ns(&self, t_ns: f64, angle: f64) -> f64 {
        let mut gap = angle - self.angle_at(t_ns);
        gap -= floor(gap);
        if gap > 1.0 - ANGLE_EPSILON {
            gap = 0.0;
        }
        gap * self.period_ns
    }

    /// One sector's time under the heads on `p`'s track.
    pub fn sector_ns(&self, p: Pbn) -> f64 {
        self.period_ns / f64::from(self.layout.sectors_on_track(p).max(1))
    }
}

/// The heads moving through a sequence of sectors: where they are and when.
#[derive(Clone, Copy, Debug)]
pub struct Cursor {
    pub t_ns: f64,
    pub cylinder: u32,
    pub head: u32,
    /// The sector just transferred, while the heads stay on its track.
    last: Option<Pbn>,
    /// The time one sector of `last`'s track takes to pass, kept with `last` so that the
    /// sectors after it need no zone lookup.
    last_sector_ns: f64,
    /// Seeks with a non-zero distance this cursor made.
    pub seeks: u64,
    pub seek_cylinders: u64,
    /// Those seeks by distance in cylinders, in powers of two ([`seek_bucket`]).
    pub seek_histogram: [u32; SEEK_BUCKETS],
    /// Where the cursor started, for the time split: everything after it is repositioning
    /// (`seek_ns`), sectors passing under the heads (`transfer_ns`), or waiting for a sector
    /// to come round (the rest: rotation).
    pub started_ns: f64,
    /// Time spent seeking and switching heads.
    pub seek_ns: f64,
    /// Time sectors took to pass under the heads.
    pub transfer_ns: f64,
}

/// Buckets of the seek-distance histogram: distance 1, 2-3, 4-7, ..., and 2^(SEEK_BUCKETS-1)
/// cylinders or more in the last.
pub const SEEK_BUCKETS: usize = 20;

/// The bucket of a seek of `cylinders` (at least 1) in [`Cursor::seek_histogram`].
pub fn seek_bucket(cylinders: u32) -> usize {
    ((31 - cylinders.max(1).leading_zeros()) as usize).min(SEEK_BUCKETS - 1)
}

impl Cursor {
    pub fn new(t_ns: f64, position: (u32, u32)) -> Cursor {
        Cursor {
            t_ns,
            cylinder: position.0,
            head: position.1,
            last: None,
            last_sector_ns: 0.0,
            seeks: 0,
            seek_cylinders: 0,
            seek_histogram: [0; SEEK_BUCKETS],
            started_ns: t_ns,
            seek_ns: 0.0,
            transfer_ns: 0.0,
        }
    }

    pub fn position(&self) -> (u32, u32) {
        (self.cylinder, self.head)
    }

    /// Whether `p` is the sector right after the one just transferred, on the same track.
    pub fn follows(&self, p: Pbn) -> bool {
        self.last.is_some_and(|l| {
            l.cylinder == p.cylinder && l.head == p.head && p.sector == l.sector + 1
        })
    }

    /// Reads on along the track as [`Cursor::read_on`] does, all `count` sectors, appending
    /// when each is done to `done`. The caller knows that the track has `count` more
    /// sectors.
    pub fn read_on_into(&mut self, count: u64, done: &mut Vec<f64>) {
        let Some(l) = self.last else {
            return;
        };
        for _ in 0..count {
            self.t_ns += self.last_sector_ns;
            done.push(self.t_ns);
        }
        self.transfer_ns += count as f64 * self.last_sector_ns;
        self.last = Some(Pbn {
            sector: l.sector + count as u32,
            ..l
        });
    }

    /// Writes on along the track: transfers the `count` sectors that follow the one just
    /// transferred, the k-th of them once its data is in the buffer at `ready_ns(k)`,
    /// exactly as [`Cursor::transfer`] writes an adjacent sector (a sector whose data is late
    /// waits whole revolutions). The caller knows that the track has `count` more sectors.
    pub fn write_on(&mut self, mech: &Mech, count: u64, ready_ns: impl Fn(u64) -> f64) {
        let Some(l) = self.last else {
            return;
        };
        for k in 0..count {
            let ready = ready_ns(k);
            if self.t_ns < ready {
                let turns = ceil((ready - self.t_ns) / mech.period_ns);
                self.t_ns += turns * mech.period_ns;
            }
            self.t_ns += self.last_sector_ns;
        }
        self.transfer_ns += count as f64 * self.last_sector_ns;
        self.last = Some(Pbn {
            sector: l.sector + count as u32,
            ..l
        });
    }

    /// Reads on along the track: transfers up to `count` of the sectors that follow the one
    /// just transferred, stopping before the first that would end after `until_ns`, and
    /// returns how many it read. Each takes one sector time, exactly as [`Cursor::transfer`]
    /// charges a read's adjacent sector. The caller knows that the track has `count` more
    /// sectors.
    pub fn read_on(&mut self, count: u64, until_ns: f64) -> u64 {
        let Some(l) = self.last else {
            return 0;
        };
        let mut n = 0;
        while n < count {
            let t = self.t_ns + self.last_sector_ns;
            if t > until_ns {
                break;
            }
            self.t_ns = t;
            n += 1;
        }
        self.transfer_ns += n as f64 * self.last_sector_ns;
        self.last = Some(Pbn {
            sector: l.sector + n as u32,
            ..l
        });
        n
    }

    /// Transfers sector `p` and returns the instant it is done. The data of a write must be
    /// in the cache by `ready_ns`; when it is not, the sector is taken one revolution later.
    /// `min_seek_ns` is a floor on a repositioning (DiskSim's minimum seek delay).
    #[inline]
    pub fn transfer(
        &mut self,
        mech: &Mech,
        p: Pbn,
        write: bool,
        ready_ns: f64,
        min_seek_ns: f64,
    ) -> f64 {
        if self.follows(p) && self.t_ns >= ready_ns {
            // The common case, kept small enough to inline: the next sector of the track, its
            // data (for a write) already in the buffer. It starts as the previous one ends.
            self.t_ns += self.last_sector_ns;
            self.transfer_ns += self.last_sector_ns;
            self.last = Some(p);
            return self.t_ns;
        }
        self.transfer_after_wait(mech, p, write, ready_ns, min_seek_ns)
    }

    /// [`Cursor::transfer`] for a sector that needs a move, a rotation or its data first.
    #[inline(never)]
    fn transfer_after_wait(
        &mut self,
        mech: &Mech,
        p: Pbn,
        write: bool,
        ready_ns: f64,
        min_seek_ns: f64,
    ) -> f64 {
        let continuing = self
            .last
            .is_some_and(|l| l.cylinder == p.cylinder && l.head == p.head && p.sector > l.sector);
        if !continuing {
            self.move_to(mech, p, write, min_seek_ns);
            self.last_sector_ns = mech.sector_ns(p);
        }
        // The sector right after the one just transferred starts the instant that one ends:
        // re-deriving the wait from the accumulated time could find its start a rounding error
        // in the past and charge a whole revolution, which DiskSim, stepping from sector to
        // sector by one sector time, never does.
        let adjacent = continuing && self.last.is_some_and(|l| p.sector == l.sector + 1);
        if !adjacent {
            self.t_ns += mech.latency_ns(self.t_ns, p);
        }
        if self.t_ns < ready_ns {
            let turns = ceil((ready_ns - self.t_ns) / mech.period_ns);
            self.t_ns += turns * mech.period_ns;
        }
        self.t_ns += self.last_sector_ns;
        self.transfer_ns += self.last_sector_ns;
        self.last = Some(p);
        self.t_ns
    }

    /// Reads `sectors`, all on one track, in whatever order they pass under the heads (a
    /// zero-latency read): once on the track, the heads take each wanted sector the first
    /// time its start passes under them, so the track's part of a request is done within one
    /// revolution of the next sector boundary. Appends when each sector is done to `done`,
    /// in the order given.
    pub fn read_any_order(&mut self, mech: &Mech, sectors: &[Pbn], done: &mut Vec<f64>) {
        let Some(&first) = sectors.first() else {
            return;
        };
        if self.position() != (first.cylinder, first.head) {
            self.move_to(mech, first, false, 0.0);
        }
        let arrival = self.t_ns;
        let sector_ns = mech.sector_ns(first);
        self.transfer_ns += sectors.len() as f64 * sector_ns;
        for &p in sectors {
            let d = arrival + mech.latency_ns(arrival, p) + sector_ns;
            done.push(d);
            if d >= self.t_ns {
                self.t_ns = d;
                self.last = Some(p);
                self.last_sector_ns = sector_ns;
            }
        }
    }

    /// Moves the heads to `p`'s track: the seek or head switch, never shorter than
    /// `min_seek_ns`.
    fn move_to(&mut self, mech: &Mech, p: Pbn, write: bool, min_seek_ns: f64) {
        let mut move_ns = mech.reposition_ns(self.position(), (p.cylinder, p.head), write);
        if min_seek_ns > move_ns {
            move_ns = min_seek_ns;
        }
        if self.cylinder != p.cylinder {
            let distance = self.cylinder.abs_diff(p.cylinder);
            self.seeks += 1;
            self.seek_cylinders += u64::from(distance);
            self.seek_histogram[seek_bucket(distance)] += 1;
        }
        self.seek_ns += move_ns;
        self.t_ns += move_ns;
        self.cylinder = p.cylinder;
        self.head = p.head;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{Geometry, HplCurve, SparingScheme, SurfaceOrder, Zone};

    fn layout(cylinders: u32) -> Layout {
        Layout::new(&Geometry {
            surfaces: 1,
            cylinders,
            surface_order: SurfaceOrder::Normal,
            sparing: SparingScheme::None,
            sparing_range_cylinders: 1,
            zones: vec![Zone {
                first_cylinder: 0,
                last_cylinder: cylinders - 1,
                sectors_per_track: 4,
                first_block_offset_sectors: 0.0,
                empty_front_sectors: 0,
                track_skew_sectors: 0.0,
                cylinder_skew_sectors: 0.0,
                spares: 0,
                slips: vec![],
                defects: vec![],
            }],
            block_count: None,
            g4: None,
        })
        .unwrap()
    }

    /// Reading and writing on along a track a run at a time takes each sector exactly when
    /// transferring the sectors one by one does, for reads up to a deadline, reads whose
    /// completions are kept, and writes whose data arrives before, during or after the
    /// sectors pass.
    #[test]
    fn reading_and_writing_on_match_sector_by_sector_transfers() {
        let seed = 0x5ec7_0001_u64;
        println!("seed {seed:#x}");
        let mut r = storsim_core::Prng::new(seed);
        let mech = Mech::new(
            layout(50),
            &Mechanics {
                rpm: 5400.0,
                head_switch_ns: 0,
                write_settle_ns: 0,
                seek: SeekCurve::Constant { time_ns: 1_000_000 },
            },
        );
        for _ in 0..20_000 {
            let t0 = (r.next_u64() % 1_000_000_000_000) as f64 + 0.25;
            let first = Pbn {
                cylinder: (r.next_u64() % 50) as u32,
                head: 0,
                sector: 0,
            };
            let mut a = Cursor::new(t0, (0, 0));
            a.transfer(&mech, first, false, 0.0, 0.0);
            let mut b = a;
            let count = r.next_u64() % 4;
            let period = mech.period_ns;
            match r.next_u64() % 3 {
                0 => {
                    let until = a.t_ns + (r.next_u64() % 5) as f64 * period / 4.0;
                    let mut n = 0;
                    for k in 1..=count {
                        let mut c = a;
                        let p = Pbn {
                            sector: k as u32,
                            ..first
                        };
                        if c.transfer(&mech, p, false, 0.0, 0.0) > until {
                            break;
                        }
                        a = c;
                        n += 1;
                    }
                    assert_eq!(b.read_on(count, until), n);
                }
                1 => {
                    let mut want = Vec::new();
                    for k in 1..=count {
                        let p = Pbn {
                            sector: k as u32,
                            ..first
                        };
                        want.push(a.transfer(&mech, p, false, 0.0, 0.0));
                    }
                    let mut got = Vec::new();
                    b.read_on_into(count, &mut got);
                    assert_eq!(got, want);
                }
                _ => {
                    let step = (r.next_u64() % 3_000_000) as f64;
                    let lead = (r.next_u64() % 4_000_000) as f64 - 2_000_000.0;
                    let ready = |k: u64| a.t_ns + lead + (k + 1) as f64 * step;
                    let readies: Vec<f64> = (0..count).map(ready).collect();
                    for k in 1..=count {
                        let p = Pbn {
                            sector: k as u32,
                            ..first
                        };
                        a.transfer(&mech, p, true, readies[k as usize - 1], 0.0);
                    }
                    b.write_on(&mech, count, |k| readies[k as usize]);
                }
            }
            assert_eq!(a.t_ns.to_bits(), b.t_ns.to_bits());
            assert_eq!(a.last, b.last);
            assert_eq!(a.last_sector_ns.to_bits(), b.last_sector_ns.to_bits());
        }
    }

    /// Every curve type, on a drive small enough for a seek table and on one too large
    /// for it: the mechanics' seek time is `seek_ns`'s, bit for bit, at every distance.
    #[test]
    fn seek_times_are_the_curves_own() {
        let hpl = HplCurve {
            boundary_cylinders: 300,
            a_ns: 3.81e6,
            b_ns_per_sqrt_cylinder: 0.33e6,
            c_ns: 7.75e6,
            e_ns_per_cylinder: 0.0059e6,
            single_ns: None,
        };
        let curves = [
            SeekCurve::Constant { time_ns: 1_500_000 },
            SeekCurve::ThreePointLine {
                single_ns: 1_000_000,
                average_ns: 8_000_000,
                full_ns: 15_000_000,
            },
            SeekCurve::ThreePointCurve {
                single_ns: 1_000_000,
                average_ns: 12_000_000,
                full_ns: 20_000_000,
            },
            // Coefficients that take the curve below zero near the start.
            SeekCurve::ThreePointCurve {
                single_ns: 0,
                average_ns: 100,
                full_ns: 20_000_000,
            },
            SeekCurve::Hpl(hpl.clone()),
            SeekCurve::Hpl(HplCurve {
                single_ns: Some(900_000),
                ..hpl.clone()
            }),
            SeekCurve::HplPlus10 {
                curve: hpl,
                first_ten_ns: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(|i| i * 400_000),
            },
            SeekCurve::Extracted {
                points: vec![(3, 2_000_000)],
            },
            SeekCurve::Extracted {
                points: vec![
                    (1, 831_000),
                    (5, 1_268_000),
                    (6, 1_263_000),
                    (100, 3_100_000),
                    (2000, 9_000_000),
                ],
            },
        ];
        for cylinders in [1, 2, 3, 7000, SEEK_TABLE_MAX_CYLINDERS + 1] {
            for seek in &curves {
                let m = Mech::new(
                    layout(cylinders),
                    &Mechanics {
                        rpm: 7200.0,
                        head_switch_ns: 0,
                        write_settle_ns: 0,
                        seek: seek.clone(),
                    },
                );
                for d in 0..cylinders + 3 {
                    assert_eq!(
                        m.seek_time_ns(d).to_bits(),
                        seek_ns(seek, d, cylinders).to_bits(),
                        "{seek:?} on {cylinders} cylinders, distance {d}"
                    );
                }
            }
        }
    }
}
