//! What a device's counters are: each one's descriptor (its name or family pattern, unit,
//! scope and a line of documentation), declared as a `const` by the model that counts it, so
//! that readers (plots, text reports, `storsim counters`, the model pages) learn what a counter
//! is from its model rather than from the shape of its name.

use std::fmt;

/// What a counter's value measures, and in which unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Events or things, without a unit (requests, merges, seeks).
    Count,
    /// Bytes.
    Bytes,
    /// Flash pages.
    Pages,
    /// Flash blocks, or cache blocks.
    Blocks,
    /// Disk sectors.
    Sectors,
    /// Disk cylinders.
    Cylinders,
    /// Nanoseconds of simulated time.
    Nanoseconds,
    /// Seconds of simulated time.
    Seconds,
    /// Microjoules.
    Microjoules,
    /// Millijoules.
    Millijoules,
    /// A fraction between 0 and 1 (a utilisation, a hit ratio).
    Ratio,
    /// A dimensionless factor that may exceed 1 (write amplification, a speed-up).
    Factor,
    /// 1 when a state holds, else 0.
    Flag,
}

/// The quantity behind a [`Unit`]: what a reader may add, convert or compare it with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Count,
    Bytes,
    Time,
    Energy,
    Ratio,
    Flag,
}

impl Unit {
    pub const fn kind(self) -> Kind {
        match self {
            Unit::Count | Unit::Pages | Unit::Blocks | Unit::Sectors | Unit::Cylinders => {
                Kind::Count
            }
            Unit::Bytes => Kind::Bytes,
            Unit::Nanoseconds | Unit::Seconds => Kind::Time,
            Unit::Microjoules | Unit::Millijoules => Kind::Energy,
            Unit::Ratio | Unit::Factor => Kind::Ratio,
            Unit::Flag => Kind::Flag,
        }
    }

    /// The unit as a table or axis writes it.
    pub const fn symbol(self) -> &'static str {
        match self {
            Unit::Count => "count",
            Unit::Bytes => "bytes",
            Unit::Pages => "pages",
            Unit::Blocks => "blocks",
            Unit::Sectors => "sectors",
            Unit::Cylinders => "cylinders",
            Unit::Nanoseconds => "ns",
            Unit::Seconds => "s",
            Unit::Microjoules => "µJ",
            Unit::Millijoules => "mJ",
            Unit::Ratio => "ratio",
            Unit::Factor => "factor",
            Unit::Flag => "0/1",
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// Whether a descriptor names one counter or a family, and what the family's `{}` stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// One counter for the whole device.
    Device,
    /// One counter per flash channel; `{}` is the channel's index.
    PerChannel,
    /// One counter per flash die; `{}` is the die's index.
    PerDie,
    /// One counter per host-interface queue; `{}` is the queue's index.
    PerQueue,
    /// One counter per child of a composite device; `{}` is the child's index.
    PerChild,
    /// One counter per histogram bucket; `{}` is the bucket's range as `4_7`, a single value
    /// as `1`, or an open range as `1024_up`.
    PerBucket,
    /// One counter per named key (a cause, an access pattern, a fault kind); `{}` is one of
    /// the keys.
    PerKey(&'static [&'static str]),
}

impl Scope {
    /// How a table writes the scope.
    pub fn label(self) -> &'static str {
        match self {
            Scope::Device => "device",
            Scope::PerChannel => "per channel",
            Scope::PerDie => "per die",
            Scope::PerQueue => "per queue",
            Scope::PerChild => "per child",
            Scope::PerBucket => "per bucket",
            Scope::PerKey(_) => "per key",
        }
    }
}

/// One counter, or one family of counters, as its model declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterDescriptor {
    /// The counter's name, or for a family its pattern with one `{}` where the member goes
    /// (`die_{}_utilisation`).
    pub name: &'static str,
    pub unit: Unit,
    pub scope: Scope,
    /// One line saying what is counted, for `storsim counters` and the model's page.
    pub doc: &'static str,
    /// Whether a device that lists the descriptor lists its counter (or a member of its
    /// family) whatever its run did; false for a counter that appears only once something has
    /// happened (a wear-out projection needs erases). A counter that depends on the device's
    /// configuration alone is not `sometimes`: the device lists its descriptor only when it is
    /// configured so.
    pub always: bool,
}

/// Which member of a descriptor's family a name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member<'n> {
    /// The descriptor names one counter ([`Scope::Device`]).
    Only,
    /// A channel's, die's or queue's counter: its index.
    Index(u32),
    /// A bucket's or a key's counter: the text that stands for `{}`.
    Key(&'n str),
}

impl CounterDescriptor {
    /// A device-wide counter.
    pub const fn new(name: &'static str, unit: Unit, doc: &'static str) -> Self {
        CounterDescriptor {
            name,
            unit,
            scope: Scope::Device,
            doc,
            always: true,
        }
    }

    /// A family of counters, `name` holding one `{}`.
    pub const fn family(name: &'static str, unit: Unit, scope: Scope, doc: &'static str) -> Self {
        CounterDescriptor {
            name,
            unit,
            scope,
            doc,
            always: true,
        }
    }

    /// The same descriptor for a counter listed only once something has happened in the run.
    pub const fn sometimes(self) -> Self {
        CounterDescriptor {
            always: false,
            ..self
        }
    }

    /// Whether `name` is this descriptor's counter or a member of its family, and which.
    pub fn matches<'n>(&self, name: &'n str) -> Option<Member<'n>> {
        let Some((before, after)) = self.name.split_once("{}") else {
            return (self.scope == Scope::Device && name == self.name).then_some(Member::Only);
        };
        let member = name.strip_prefix(before)?.strip_suffix(after)?;
        if member.is_empty() {
            return None;
        }
        match self.scope {
            Scope::Device => None,
            Scope::PerChannel | Scope::PerDie | Scope::PerQueue | Scope::PerChild => {
                let digits = member.bytes().all(|b| b.is_ascii_digit());
                digits.then(|| member.parse().ok().map(Member::Index))?
            }
            Scope::PerBucket => is_bucket(member).then_some(Member::Key(member)),
            Scope::PerKey(keys) => keys.contains(&member).then_some(Member::Key(member)),
        }
    }

    /// The family's first words before `{}` and after it: what a text report folds a family
    /// under (`die_{}_utilisation` gives `die` and `utilisation`).
    pub fn pattern_parts(&self) -> (&'static str, &'static str) {
        self.name.split_once("{}").unwrap_or((self.name, ""))
    }
}

/// `1`, `4_7` or `1024_up`: a histogram bucket's range.
fn is_bucket(member: &str) -> bool {
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match member.split_once('_') {
        None => number(member),
        Some((low, "up")) => number(low),
        Some((low, high)) => number(low) && number(high),
    }
}

/// A descriptor as a device lists it: a composite device names its children's counters with a
/// prefix of its own (`child0_ssd_`, `flash_`, `ftl_`), so the described name is the prefix
/// followed by the descriptor's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Described {
    pub prefix: String,
    pub descriptor: &'static CounterDescriptor,
}

impl Described {
    /// A descriptor of the device's own, with no prefix.
    pub fn own(descriptor: &'static CounterDescriptor) -> Self {
        Described {
            prefix: String::new(),
            descriptor,
        }
    }

    /// Every descriptor of a table, with no prefix.
    pub fn all(table: &'static [CounterDescriptor]) -> impl Iterator<Item = Described> {
        table.iter().map(Described::own)
    }

    /// The same descriptor under a further prefix, put in front of the one it has.
    pub fn within(&self, prefix: &str) -> Self {
        Described {
            prefix: format!("{prefix}{}", self.prefix),
            descriptor: self.descriptor,
        }
    }

    /// Whether `name` is this counter or a member of its family, and which.
    pub fn matches<'n>(&self, name: &'n str) -> Option<Member<'n>> {
        self.descriptor
            .matches(name.strip_prefix(self.prefix.as_str())?)
    }

    /// The name or pattern with its prefix, as `storsim counters` lists it.
    pub fn full_name(&self) -> String {
        format!("{}{}", self.prefix, self.descriptor.name)
    }
}

/// The one descriptor of `descriptors` that `name` matches, if exactly one does.
pub fn describe<'d>(descriptors: &'d [Described], name: &str) -> Option<&'d Described> {
    let mut matching = descriptors.iter().filter(|d| d.matches(name).is_some());
    let first = matching.next()?;
    matching.next().is_none().then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIE: CounterDescriptor = CounterDescriptor::family(
        "die_{}_utilisation",
        Unit::Ratio,
        Scope::PerDie,
        "A die's busy share.",
    );
    const CAUSE: CounterDescriptor = CounterDescriptor::family(
        "energy_{}_uj",
        Unit::Microjoules,
        Scope::PerKey(&["host", "gc"]),
        "Energy by cause.",
    );
    const HIST: CounterDescriptor = CounterDescriptor::family(
        "erase_count_hist_{}",
        Unit::Blocks,
        Scope::PerBucket,
        "Blocks by erase count.",
    );
    const TOTAL: CounterDescriptor =
        CounterDescriptor::new("energy_total_uj", Unit::Microjoules, "Energy in all.");

    #[test]
    fn families_match_their_members_only() {
        assert_eq!(DIE.matches("die_17_utilisation"), Some(Member::Index(17)));
        assert_eq!(DIE.matches("die__utilisation"), None);
        assert_eq!(DIE.matches("die_x_utilisation"), None);
        assert_eq!(DIE.matches("die_1_2_utilisation"), None);
        assert_eq!(CAUSE.matches("energy_gc_uj"), Some(Member::Key("gc")));
        assert_eq!(CAUSE.matches("energy_total_uj"), None);
        assert_eq!(TOTAL.matches("energy_total_uj"), Some(Member::Only));
        assert_eq!(
            HIST.matches("erase_count_hist_4_7"),
            Some(Member::Key("4_7"))
        );
        assert_eq!(HIST.matches("erase_count_hist_1"), Some(Member::Key("1")));
        assert_eq!(
            HIST.matches("erase_count_hist_64_up"),
            Some(Member::Key("64_up"))
        );
        assert_eq!(HIST.matches("erase_count_hist_4_x"), None);
    }

    #[test]
    fn prefixes_are_part_of_the_described_name() {
        static DESCRIPTORS: [CounterDescriptor; 2] = [DIE, TOTAL];
        let listed: Vec<Described> = Described::all(&DESCRIPTORS)
            .map(|d| d.within("flash_").within("child0_"))
            .collect();
        assert_eq!(listed[0].full_name(), "child0_flash_die_{}_utilisation");
        assert_eq!(
            describe(&listed, "child0_flash_die_3_utilisation").map(|d| d.descriptor),
            Some(&DIE)
        );
        assert_eq!(describe(&listed, "die_3_utilisation"), None);
    }
}
