//! Running simulations from descriptions: errors by kind, the statistics against the engine's
//! own count, and a cancelled run's statistics covering what completed.

use storsim_core::Completion;
use storsim_engine::{CancelToken, CompletionSink, EngineOptions, Replay, CHECK_INTERVAL};
use storsim_sim::{simulate, Session, SimError, WorkloadSource};

fn synthetic(requests: u64) -> WorkloadSource {
    WorkloadSource::Synthetic(format!(
        "synthetic:rw=randrw,rwmixread=70,bs=4k,requests={requests},seed=3"
    ))
}

fn closed(depth: u32) -> EngineOptions {
    EngineOptions {
        replay: Replay::Closed { depth },
        ..Default::default()
    }
}

#[test]
fn an_unknown_device_and_a_bad_workload_are_input_errors_not_model_faults() {
    let e = simulate("no-such-device", &synthetic(10), 1, &closed(1)).unwrap_err();
    assert!(matches!(e, SimError::Device(_)), "{e:?}");
    assert!(e.to_string().contains("no-such-device"), "{e}");
    assert!(!e.is_model_fault());

    let bad = WorkloadSource::Synthetic("synthetic:rw=sideways".into());
    let e = simulate("stec-zeus", &bad, 1, &closed(1)).unwrap_err();
    assert!(matches!(e, SimError::Workload(_)), "{e:?}");
    assert!(!e.is_model_fault());

    let missing = WorkloadSource::Trace {
        path: "/nonexistent/trace.csv".into(),
        options: Default::default(),
    };
    let e = simulate("stec-zeus", &missing, 1, &closed(1)).unwrap_err();
    assert!(matches!(e, SimError::Workload(_)), "{e:?}");
}

#[test]
fn the_statistics_cover_every_request_the_sink_saw() {
    let mut session = Session::open("stec-zeus", &synthetic(2_000), 1).unwrap();
    assert_eq!(session.device_name, "stec-zeus");
    let mut seen = 0u64;
    let mut count = |_: &Completion| seen += 1;
    let outcome = session
        .run(&closed(4), Some(&mut count), &mut |_, _| {}, None)
        .unwrap();
    assert_eq!(outcome.info.requests_completed, 2_000);
    assert_eq!(seen, 2_000);
    assert_eq!(outcome.summary.all.requests, 2_000);
    assert_eq!(
        outcome.summary.read.requests + outcome.summary.write.requests,
        2_000
    );
    // The same description runs the same way again.
    let again = simulate("stec-zeus", &synthetic(2_000), 1, &closed(4)).unwrap();
    assert_eq!(again.summary, outcome.summary);
    assert_eq!(again.info, outcome.info);
}

/// Cancels its token at its `at`-th completion.
struct CancelAt {
    token: CancelToken,
    at: u64,
    seen: u64,
}

impl CompletionSink for CancelAt {
    fn completed(&mut self, _: &Completion) {
        self.seen += 1;
        if self.seen == self.at {
            self.token.cancel();
        }
    }
}

#[test]
fn a_cancelled_run_reports_statistics_for_what_completed() {
    let token = CancelToken::new();
    let mut sink = CancelAt {
        token: token.clone(),
        at: 100,
        seen: 0,
    };
    let mut session = Session::open("stec-zeus", &synthetic(20_000), 1).unwrap();
    let outcome = session
        .run(&closed(4), Some(&mut sink), &mut |_, _| {}, Some(token))
        .unwrap();
    assert!(outcome.info.cancelled);
    assert!(outcome.info.requests_completed >= CHECK_INTERVAL);
    // Seen at the next check, then at most the loop's four requests drain.
    assert!(outcome.info.requests_completed <= CHECK_INTERVAL + 4);
    assert_eq!(
        outcome.summary.all.requests,
        outcome.info.requests_completed
    );
    assert_eq!(sink.seen, outcome.info.requests_completed);
}
