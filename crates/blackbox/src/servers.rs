//! A pool of identical FIFO servers: the queueing structure shared by the black-box models.
//! A request starts when the earliest server frees up and holds it for a service time the
//! model computes at submission; nothing preempts, so start and finish are known at submit.

use storsim_core::{Completion, DeviceError, EventQueue, Request, SimDuration, SimTime, Status};

pub struct FifoServers {
    /// When each server finishes its last assigned request.
    free_at: Vec<SimTime>,
    in_flight: EventQueue<Completion>,
    /// Sum of service times handed out, for utilisation.
    busy_ns: u64,
}

impl FifoServers {
    /// `servers` requests are in service at once; at most `queue_depth` are accepted at a time
    /// (in service plus waiting).
    pub fn new(servers: usize, queue_depth: usize) -> Self {
        assert!(servers >= 1, "a device needs at least one server");
        assert!(
            queue_depth >= 1,
            "a device needs a queue depth of at least one"
        );
        FifoServers {
            free_at: vec![SimTime::ZERO; servers],
            in_flight: EventQueue::with_capacity(queue_depth),
            busy_ns: 0,
        }
    }

    pub fn queue_depth(&self) -> usize {
        self.in_flight.capacity()
    }

    pub fn outstanding(&self) -> usize {
        self.in_flight.len()
    }

    pub fn has_room(&self) -> bool {
        self.in_flight.len() < self.in_flight.capacity()
    }

    pub fn busy_ns(&self) -> u64 {
        self.busy_ns
    }

    /// Queues `request` for `service`; call only after checking `has_room`.
    pub fn submit(
        &mut self,
        now: SimTime,
        request: Request,
        service: SimDuration,
    ) -> Result<(), DeviceError> {
        if !self.has_room() {
            return Err(DeviceError::QueueFull {
                queue_depth: self.queue_depth(),
            });
        }
        assert!(
            now >= request.arrival,
            "request {} submitted before it arrived",
            request.id
        );
        // The lowest-numbered of the earliest-free servers, so ties are deterministic.
        let (server, free_at) = self
            .free_at
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, t)| (t, i))
            .expect("at least one server");
        let service_start = free_at.max(now);
        let finish = service_start + service;
        self.free_at[server] = finish;
        self.busy_ns += service.as_ns();
        let completion = Completion {
            request,
            service_start,
            finish,
            status: Status::Ok,
        };
        // Room was checked above, so the push cannot fail.
        self.in_flight
            .push(finish, completion)
            .map_err(|_| DeviceError::QueueFull {
                queue_depth: self.queue_depth(),
            })
    }

    pub fn next_deadline(&self) -> Option<SimTime> {
        self.in_flight.peek_time()
    }

    pub fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        while let Some((_, completion)) = self.in_flight.pop_due(now) {
            done.push(completion);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::Op;

    fn req(id: u64, arrival: u64) -> Request {
        Request {
            id,
            op: Op::Read,
            offset_bytes: 0,
            len_bytes: 512,
            arrival: SimTime(arrival),
            flow: 0,
        }
    }

    #[test]
    fn one_server_serialises_in_fifo_order() {
        let mut s = FifoServers::new(1, 4);
        s.submit(SimTime(0), req(0, 0), SimDuration(100)).unwrap();
        s.submit(SimTime(10), req(1, 10), SimDuration(5)).unwrap();
        let mut done = Vec::new();
        s.advance(SimTime(99), &mut done);
        assert!(done.is_empty());
        s.advance(SimTime(105), &mut done);
        let ids: Vec<_> = done
            .iter()
            .map(|c| (c.request.id, c.service_start.0, c.finish.0))
            .collect();
        assert_eq!(ids, [(0, 0, 100), (1, 100, 105)]);
    }

    #[test]
    fn two_servers_overlap_and_finish_out_of_order() {
        let mut s = FifoServers::new(2, 4);
        s.submit(SimTime(0), req(0, 0), SimDuration(100)).unwrap();
        s.submit(SimTime(0), req(1, 0), SimDuration(10)).unwrap();
        s.submit(SimTime(0), req(2, 0), SimDuration(10)).unwrap();
        let mut done = Vec::new();
        s.advance(SimTime(1000), &mut done);
        let ids: Vec<_> = done
            .iter()
            .map(|c| (c.request.id, c.service_start.0, c.finish.0))
            .collect();
        assert_eq!(ids, [(1, 0, 10), (2, 10, 20), (0, 0, 100)]);
    }

    #[test]
    fn refuses_beyond_queue_depth() {
        let mut s = FifoServers::new(1, 1);
        s.submit(SimTime(0), req(0, 0), SimDuration(1)).unwrap();
        assert_eq!(
            s.submit(SimTime(0), req(1, 0), SimDuration(1)),
            Err(DeviceError::QueueFull { queue_depth: 1 })
        );
    }
}
