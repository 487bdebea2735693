//! Which plane a host page goes to: the next in a round-robin over the device (dynamic, the
//! default), or the plane its logical address chooses (static, MQSim's plane allocation
//! schemes of Tavakkol et al.: an order of channel (C), way or chip (W), die (D) and plane (P),
//! the first varying fastest).

use storsim_flash::Geometry;

/// How the page FTL chooses a host page's plane.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PlaneAllocation {
    /// The next plane of a round-robin over channels, then dies, then planes, whatever the
    /// page's address: log-structured striping, which spreads any write stream evenly.
    #[default]
    Dynamic,
    /// The page's logical address fixes its plane: address `n` goes to position `n` modulo the
    /// planes of an order in which the first of the four parts varies fastest (`CWDP`: channel,
    /// then chip, then die, then plane). Hot addresses keep their planes busy, as in MQSim.
    Static([Part; 4]),
}

/// One level of the back end's hierarchy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Channel,
    Way,
    Die,
    Plane,
}

/// The key's values: `dynamic`, then MQSim's 24 orders as its files name them.
pub const NAMES: [&str; 25] = [
    "dynamic", "CWDP", "CWPD", "CDWP", "CDPW", "CPWD", "CPDW", "WCDP", "WCPD", "WDCP", "WDPC",
    "WPCD", "WPDC", "DCWP", "DCPW", "DWCP", "DWPC", "DPCW", "DPWC", "PCWD", "PCDW", "PWCD", "PWDC",
    "PDCW", "PDWC",
];

impl PlaneAllocation {
    /// The allocation a name of [`NAMES`] states.
    pub fn from_name(name: &str) -> Option<PlaneAllocation> {
        if name == "dynamic" {
            return Some(PlaneAllocation::Dynamic);
        }
        if !NAMES.contains(&name) {
            return None;
        }
        let mut order = [Part::Channel; 4];
        for (slot, letter) in order.iter_mut().zip(name.chars()) {
            *slot = match letter {
                'C' => Part::Channel,
                'W' => Part::Way,
                'D' => Part::Die,
                _ => Part::Plane,
            };
        }
        Some(PlaneAllocation::Static(order))
    }

    /// Its name in [`NAMES`].
    pub fn name(self) -> &'static str {
        let PlaneAllocation::Static(order) = self else {
            return "dynamic";
        };
        let letters: String = order
            .iter()
            .map(|p| match p {
                Part::Channel => 'C',
                Part::Way => 'W',
                Part::Die => 'D',
                Part::Plane => 'P',
            })
            .collect();
        NAMES
            .into_iter()
            .find(|n| *n == letters)
            .expect("every order is named")
    }
}

/// Every plane of `geometry` (numbered as the geometry numbers them: channel, chip, die, plane,
/// the last fastest) in the static order `order`: position `k` is `k` written in the mixed
/// radix of the order's parts, the first part the least significant.
pub fn static_order(geometry: &Geometry, order: [Part; 4]) -> Vec<u32> {
    let g = geometry;
    let count = |part: Part| match part {
        Part::Channel => g.channels,
        Part::Way => g.chips_per_channel,
        Part::Die => g.dies_per_chip,
        Part::Plane => g.planes_per_die,
    };
    (0..g.planes())
        .map(|k| {
            let mut rest = k;
            let (mut channel, mut chip, mut die, mut plane) = (0, 0, 0, 0);
            for part in order {
                let n = count(part);
                let digit = rest % n;
                rest /= n;
                match part {
                    Part::Channel => channel = digit,
                    Part::Way => chip = digit,
                    Part::Die => die = digit,
                    Part::Plane => plane = digit,
                }
            }
            ((channel * g.chips_per_channel + chip) * g.dies_per_chip + die) * g.planes_per_die
                + plane
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> Geometry {
        Geometry {
            channels: 2,
            chips_per_channel: 3,
            dies_per_chip: 2,
            planes_per_die: 2,
            blocks_per_plane: 4,
            pages_per_block: 4,
            page_bytes: 4096,
            oob_bytes: 0,
        }
    }

    #[test]
    fn every_order_names_itself_and_places_every_plane_once() {
        let g = geometry();
        for name in NAMES {
            let a = PlaneAllocation::from_name(name).unwrap();
            assert_eq!(a.name(), name);
            if let PlaneAllocation::Static(order) = a {
                let mut planes = static_order(&g, order);
                planes.sort_unstable();
                assert_eq!(planes, (0..g.planes()).collect::<Vec<_>>(), "{name}");
            }
        }
        assert_eq!(PlaneAllocation::from_name("CWDX"), None);
        assert_eq!(PlaneAllocation::from_name("cwdp"), None);
    }

    #[test]
    fn the_first_part_varies_fastest() {
        let g = geometry();
        // Planes are numbered ((channel × 3 + chip) × 2 + die) × 2 + plane: 12 per channel,
        // 4 per chip, 2 per die.
        let cwdp = static_order(&g, [Part::Channel, Part::Way, Part::Die, Part::Plane]);
        assert_eq!(&cwdp[..4], &[0, 12, 4, 16]);
        let pdwc = static_order(&g, [Part::Plane, Part::Die, Part::Way, Part::Channel]);
        // Plane first: the geometry's own numbering.
        assert_eq!(pdwc, (0..g.planes()).collect::<Vec<_>>());
    }
}
