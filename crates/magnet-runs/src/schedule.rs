//! Continuous sampling: `10ms,1ms,100us every 1m` runs one 10 ms run, one
//! 1 ms run and one 100 µs run back to back once a minute. Cycles begin at
//! wall-clock multiples of the period (10:00:00, 10:01:00, …) and each run in a
//! cycle starts at a fixed offset from the cycle, so every host with the same
//! schedule samples the same instants: Syncmillisampler without coordination.

use std::time::Duration;

use crate::Error;
use magnet_common::units::{format_duration, parse_duration};

/// Time left between two runs of a cycle to load and attach the next one.
pub const SETUP_GAP: Duration = Duration::from_millis(200);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub intervals: Vec<Duration>,
    pub every: Duration,
}

/// One run of a cycle: its interval and its start (Unix ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    pub interval: Duration,
    pub start_ns: u64,
}

impl Schedule {
    /// Parses `INTERVAL[,INTERVAL…] every PERIOD`.
    pub fn parse(s: &str) -> Result<Schedule, Error> {
        let bad = |why: &str| {
            Error::Config(format!(
                "--schedule '{s}': {why} (example: '10ms,1ms,100us every 1m')"
            ))
        };
        let (list, every) = s
            .split_once(" every ")
            .ok_or_else(|| bad("no ' every PERIOD'"))?;
        let intervals = list
            .split(',')
            .map(|x| parse_duration(x.trim()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(&e))?;
        if intervals.is_empty() || intervals.iter().any(|d| d.is_zero()) {
            return Err(bad("intervals must be positive"));
        }
        let every = parse_duration(every.trim()).map_err(|e| bad(&e))?;
        if every.is_zero() {
            return Err(bad("the period must be positive"));
        }
        Ok(Schedule { intervals, every })
    }

    /// How long one cycle's runs take with `samples` buckets each, gaps included.
    pub fn busy(&self, samples: u32) -> Duration {
        self.intervals
            .iter()
            .map(|i| *i * samples + SETUP_GAP)
            .sum()
    }

    /// Refuses a schedule whose runs do not fit in its period.
    pub fn check(&self, samples: u32) -> Result<(), Error> {
        let busy = self.busy(samples);
        if busy > self.every {
            return Err(Error::Config(format!(
                "--schedule: one cycle of {} runs x {samples} samples takes {}, longer than its period {}",
                self.intervals.len(),
                format_duration(busy),
                format_duration(self.every)
            )));
        }
        Ok(())
    }

    /// The runs of the first cycle that begins at least `SETUP_GAP` after `now_ns`.
    pub fn next_cycle(&self, now_ns: u64, samples: u32) -> Vec<Planned> {
        let period = self.every.as_nanos() as u64;
        let earliest = now_ns + SETUP_GAP.as_nanos() as u64;
        let cycle = earliest.div_ceil(period) * period;
        let mut at = cycle;
        self.intervals
            .iter()
            .map(|&interval| {
                let p = Planned {
                    interval,
                    start_ns: at,
                };
                at += (interval * samples + SETUP_GAP).as_nanos() as u64;
                p
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_plans_aligned_cycles() {
        let s = Schedule::parse("10ms,1ms,100us every 1m").unwrap();
        assert_eq!(
            s.intervals,
            vec![
                Duration::from_millis(10),
                Duration::from_millis(1),
                Duration::from_micros(100)
            ]
        );
        assert_eq!(s.every, Duration::from_secs(60));
        s.check(2000).unwrap();
        let now = 1_795_341_600_000_000_000 + 5_000_000_000; // 10:00:05
        let plan = s.next_cycle(now, 2000);
        assert_eq!(plan[0].start_ns, 1_795_341_660_000_000_000); // 10:01:00
        assert_eq!(plan[1].start_ns, plan[0].start_ns + 20_200_000_000);
        assert_eq!(plan[2].start_ns, plan[1].start_ns + 2_200_000_000);
        assert!(Schedule::parse("10ms every").is_err());
        assert!(Schedule::parse("10ms,1ms every 1s")
            .unwrap()
            .check(2000)
            .is_err());
    }
}
