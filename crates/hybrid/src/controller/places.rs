//! A fixed number of places for background work in flight (flush jobs, promotions). A place is
//! named by its index, which a child request's tag carries so that the work is found again when
//! the child answers; the fixed number bounds how much of a child's queue the work takes.

pub(super) struct Places<T> {
    places: Vec<Option<T>>,
    in_flight: usize,
}

impl<T: Copy> Places<T> {
    pub(super) fn new(capacity: usize) -> Self {
        Places {
            places: vec![None; capacity],
            in_flight: 0,
        }
    }

    pub(super) fn is_full(&self) -> bool {
        self.in_flight == self.places.len()
    }

    /// Puts `work` in the first free place and returns its index. The caller checks
    /// `is_full` first.
    pub(super) fn insert(&mut self, work: T) -> usize {
        let i = self
            .places
            .iter()
            .position(Option::is_none)
            .expect("a free place for background work");
        self.places[i] = Some(work);
        self.in_flight += 1;
        i
    }

    /// The work in place `i`.
    pub(super) fn get(&self, i: usize) -> T {
        self.places[i].expect("live background work")
    }

    /// Frees place `i` and returns its work.
    pub(super) fn take(&mut self, i: usize) -> T {
        let work = self.places[i].take().expect("live background work");
        self.in_flight -= 1;
        work
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_fill_lowest_first_and_are_reused_after_take() {
        let mut places = Places::new(2);
        assert_eq!(places.insert('a'), 0);
        assert_eq!(places.insert('b'), 1);
        assert!(places.is_full());
        assert_eq!(places.take(0), 'a');
        assert!(!places.is_full());
        assert_eq!(places.get(1), 'b');
        assert_eq!(places.insert('c'), 0);
    }

    #[test]
    #[should_panic(expected = "live background work")]
    fn taking_a_free_place_is_a_bug() {
        let mut places: Places<u8> = Places::new(1);
        places.take(0);
    }
}
