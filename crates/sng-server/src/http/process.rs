//! The process metrics of `/metrics`, under Prometheus' standard names (as its client libraries
//! write them), read from `/proc`, and `sng_build_info`. Off Linux, or when `/proc` cannot be
//! read, the process families are left out.

use crate::events::write_metric;

/// Clock ticks per second of `/proc/PID/stat` (`USER_HZ`: 100 on every Linux architecture;
/// Prometheus' Go client assumes it too).
const USER_HZ: f64 = 100.0;

/// What `/proc` says of this process.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProcessStats {
    pub cpu_seconds: f64,
    pub virtual_bytes: f64,
    pub resident_bytes: f64,
    pub start_time_seconds: f64,
    pub open_fds: f64,
    pub max_fds: f64,
}

/// `/proc/self/stat`, `/proc/self/status`, `/proc/stat` (boot time), `/proc/self/fd` and the
/// limit of open files; `None` when one cannot be read.
fn read() -> Option<ProcessStats> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let system = std::fs::read_to_string("/proc/stat").ok()?;
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as f64;
    let max_fds = rlimit::getrlimit(rlimit::Resource::NOFILE).ok()?.0 as f64;
    let mut stats = parse(&stat, &status, &system)?;
    stats.open_fds = open_fds;
    stats.max_fds = max_fds;
    Some(stats)
}

/// The figures of the `/proc` texts (pure): `stat` fields 14-15 (user and system CPU ticks),
/// 22 (start, ticks after boot) and 23 (virtual size, bytes); `VmRSS` of `status` (kB); `btime`
/// of the system's `stat` (boot, Unix seconds).
pub(crate) fn parse(stat: &str, status: &str, system: &str) -> Option<ProcessStats> {
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3.
    let field = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
    let ticks = field(14)? + field(15)?;
    let start_ticks = field(22)?;
    let virtual_bytes = field(23)?;
    let rss_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()?;
    let boot = system
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse::<f64>()
        .ok()?;
    Some(ProcessStats {
        cpu_seconds: ticks / USER_HZ,
        virtual_bytes,
        resident_bytes: rss_kb * 1024.0,
        start_time_seconds: boot + start_ticks / USER_HZ,
        open_fds: 0.0,
        max_fds: 0.0,
    })
}

/// Append the process families (when `/proc` answers) and `sng_build_info`.
pub(crate) fn write(out: &mut String) {
    if let Some(p) = read() {
        for (name, kind, help, value) in [
            (
                "process_cpu_seconds_total",
                "counter",
                "Total user and system CPU time spent in seconds.",
                p.cpu_seconds,
            ),
            (
                "process_open_fds",
                "gauge",
                "Number of open file descriptors.",
                p.open_fds,
            ),
            (
                "process_max_fds",
                "gauge",
                "Maximum number of open file descriptors.",
                p.max_fds,
            ),
            (
                "process_virtual_memory_bytes",
                "gauge",
                "Virtual memory size in bytes.",
                p.virtual_bytes,
            ),
            (
                "process_resident_memory_bytes",
                "gauge",
                "Resident memory size in bytes.",
                p.resident_bytes,
            ),
            (
                "process_start_time_seconds",
                "gauge",
                "Start time of the process since unix epoch in seconds.",
                p.start_time_seconds,
            ),
        ] {
            write_metric(out, name, kind, help, &[(&[], value)]);
        }
    }
    write_metric(
        out,
        "sng_build_info",
        "gauge",
        "The version and git commit of the running server (always 1).",
        &[(
            &[
                ("version", super::probes::VERSION),
                ("commit", super::probes::COMMIT),
            ],
            1.0,
        )],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proc_texts_are_read_by_field() {
        let stat = "4242 (sng server) S 1 4242 4242 0 -1 4194560 5000 0 0 0 250 50 0 0 20 0 12 0 \
                    123400 987654321 2500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0";
        let status = "Name:\tsng\nVmSize:\t  964506 kB\nVmRSS:\t   10000 kB\n";
        let system = "cpu  1 2 3\nbtime 1700000000\nprocesses 9\n";
        let p = parse(stat, status, system).unwrap();
        assert_eq!(p.cpu_seconds, 3.0);
        assert_eq!(p.virtual_bytes, 987654321.0);
        assert_eq!(p.resident_bytes, 10000.0 * 1024.0);
        assert_eq!(p.start_time_seconds, 1700000000.0 + 1234.0);
        assert!(parse("garbage", status, system).is_none());
    }

    #[test]
    fn this_process_is_measured() {
        let p = read().expect("/proc is readable on Linux");
        assert!(p.resident_bytes > 0.0 && p.virtual_bytes >= p.resident_bytes);
        assert!(p.open_fds >= 1.0 && p.max_fds >= p.open_fds);
        let now = chrono::Utc::now().timestamp() as f64;
        assert!(p.start_time_seconds <= now + 1.0 && p.start_time_seconds > now - 86400.0 * 365.0);
    }
}
