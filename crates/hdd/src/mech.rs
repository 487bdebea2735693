//! Exact rotational position. The platters turn at a constant rate from angle zero at time
//! zero, so the angle under the heads is a function of the instant alone; a repositioning
//! ends at some angle and the wanted sector arrives when the platter has turned to its start.
//! This follows DiskSim's g1 mechanics: a move costs the larger of the seek and the head
//! switch, plus the write settle for writes, and a transfer costs one sector width per sector.

use crate::layout::{Layout, Pbn};
use crate::params::{Mechanics, SeekCurve};
use crate::seek::seek_ns;

/// Fractions of a revolution closer than this to a full turn count as no wait at all: they
/// are rounding left over from the previous sector's end.
const ANGLE_EPSILON: f64 = 1e-9;

#[derive(Clone, Debug)]
pub struct Mech {
    pub layout: Layout,
    pub period_ns: f64,
    head_switch_ns: f64,
    write_settle_ns: f64,
    seek: SeekCurve,
}

impl Mech {
    pub fn new(layout: Layout, m: &Mechanics) -> Mech {
        Mech {
            layout,
            period_ns: 60.0e9 / m.rpm,
            head_switch_ns: m.head_switch_ns as f64,
            write_settle_ns: m.write_settle_ns as f64,
            seek: m.seek.clone(),
        }
    }

    /// The angle under the heads at instant `t_ns`, as a fraction of a revolution.
    pub fn angle_at(&self, t_ns: f64) -> f64 {
        let turns = t_ns / self.period_ns;
        turns - turns.floor()
    }

    /// Time to move from one track to another: the seek or the head switch, whichever is
    /// longer, plus the write settle before a write (never below zero).
    pub fn reposition_ns(&self, from: (u32, u32), to: (u32, u32), write: bool) -> f64 {
        let seek = seek_ns(&self.seek, from.0.abs_diff(to.0), self.layout.cylinders());
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
        let mut gap = self.layout.sector_angle(p) - self.angle_at(t_ns);
        gap -= gap.floor();
        if gap > 1.0 - ANGLE_EPSILON {
            gap = 0.0;
        }
        gap * self.period_ns
    }

    pub fn sector_ns(&self, cylinder: u32) -> f64 {
        self.period_ns / f64::from(self.layout.sectors_per_track(cylinder).max(1))
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
    /// Seeks with a non-zero distance this cursor made.
    pub seeks: u64,
    pub seek_cylinders: u64,
}

impl Cursor {
    pub fn new(t_ns: f64, position: (u32, u32)) -> Cursor {
        Cursor {
            t_ns,
            cylinder: position.0,
            head: position.1,
            last: None,
            seeks: 0,
            seek_cylinders: 0,
        }
    }

    pub fn position(&self) -> (u32, u32) {
        (self.cylinder, self.head)
    }

    /// Transfers sector `p` and returns the instant it is done. The data of a write must be
    /// in the cache by `ready_ns`; when it is not, the sector is taken one revolution later.
    /// `min_seek_ns` is a floor on a repositioning (DiskSim's minimum seek delay).
    pub fn transfer(
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
            let turns = ((ready_ns - self.t_ns) / mech.period_ns).ceil();
            self.t_ns += turns * mech.period_ns;
        }
        self.t_ns += mech.sector_ns(p.cylinder);
        self.last = Some(p);
        self.t_ns
    }

    /// Reads `sectors`, all on one track, in whatever order they pass under the heads (a
    /// zero-latency read): once on the track, the heads take each wanted sector the first
    /// time its start passes under them, so the track's part of a request is done within one
    /// revolution of the next sector boundary. Returns when each sector is done, in the order
    /// given.
    pub fn read_any_order(&mut self, mech: &Mech, sectors: &[Pbn]) -> Vec<f64> {
        let Some(&first) = sectors.first() else {
            return Vec::new();
        };
        if self.position() != (first.cylinder, first.head) {
            self.move_to(mech, first, false, 0.0);
        }
        let arrival = self.t_ns;
        let sector_ns = mech.sector_ns(first.cylinder);
        let done: Vec<f64> = sectors
            .iter()
            .map(|&p| arrival + mech.latency_ns(arrival, p) + sector_ns)
            .collect();
        for (&p, &d) in sectors.iter().zip(&done) {
            if d >= self.t_ns {
                self.t_ns = d;
                self.last = Some(p);
            }
        }
        done
    }

    /// Moves the heads to `p`'s track: the seek or head switch, never shorter than
    /// `min_seek_ns`.
    fn move_to(&mut self, mech: &Mech, p: Pbn, write: bool, min_seek_ns: f64) {
        let mut move_ns = mech.reposition_ns(self.position(), (p.cylinder, p.head), write);
        if min_seek_ns > move_ns {
            move_ns = min_seek_ns;
        }
        if self.cylinder != p.cylinder {
            self.seeks += 1;
            self.seek_cylinders += u64::from(self.cylinder.abs_diff(p.cylinder));
        }
        self.t_ns += move_ns;
        self.cylinder = p.cylinder;
        self.head = p.head;
    }
}
