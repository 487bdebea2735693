//! Power states over time: active while the mechanism or the interface works, idle while the
//! platters spin without work, standby once idle has lasted the configured timeout. Energy is
//! the integral of each state's draw, plus a fixed amount per spin-up.

use crate::params::PowerParams;

#[derive(Clone, Debug, Default)]
pub struct PowerTracker {
    /// Time accounted so far.
    accounted_ns: f64,
    /// The drive is busy until this instant.
    pub busy_until_ns: f64,
    pub active_ns: f64,
    pub idle_ns: f64,
    pub standby_ns: f64,
    pub spin_ups: u64,
}

impl PowerTracker {
    /// Accounts time up to `t_ns`.
    pub fn account_to(&mut self, p: &PowerParams, t_ns: f64) {
        if t_ns <= self.accounted_ns {
            return;
        }
        let from = self.accounted_ns;
        let busy_end = self.busy_until_ns.clamp(from, t_ns);
        self.active_ns += busy_end - from;
        let idle_from = busy_end;
        let standby_from = match p.standby_after_idle_ns {
            Some(timeout) => (self.busy_until_ns + timeout as f64).clamp(idle_from, t_ns),
            None => t_ns,
        };
        self.idle_ns += standby_from - idle_from;
        self.standby_ns += t_ns - standby_from;
        self.accounted_ns = t_ns;
    }

    /// Whether the platters are stopped at `t_ns`.
    pub fn in_standby(&self, p: &PowerParams, t_ns: f64) -> bool {
        p.standby_after_idle_ns
            .is_some_and(|timeout| t_ns > self.busy_until_ns + timeout as f64)
    }

    pub fn energy_mj(&self, p: &PowerParams) -> (f64, f64, f64, f64) {
        (
            p.active_mw * self.active_ns * 1e-9,
            p.idle_mw * self.idle_ns * 1e-9,
            p.standby_mw * self.standby_ns * 1e-9,
            p.spin_up_mj * self.spin_ups as f64,
        )
    }
}
