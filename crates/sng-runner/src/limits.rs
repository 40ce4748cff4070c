//! Resource limits of a run (`spec.resources.limits`), with control groups where the machine
//! allows it (cgroup v2 unified hierarchy, or v1 `memory`/`cpu` controllers, writable by the
//! server). Elsewhere the limits are not enforced and the run log says so.

use std::path::{Path, PathBuf};

/// Limits of one run (a field of the job spec).
pub use sng_api::agent::Limits;

const ROOT: &str = "/sys/fs/cgroup";

/// The control groups of one run; removed on drop.
#[derive(Debug)]
pub struct RunCgroup {
    dirs: Vec<PathBuf>,
    /// cgroup v1: (controller, group dir) — threads can be moved one by one.
    v1: bool,
}

/// The calling thread's id, from `/proc/thread-self` (`PID/task/TID`).
fn thread_id() -> Option<String> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// The group of the calling thread in a v1 hierarchy, e.g. `/sys/fs/cgroup/memory/a/b`.
fn current_group(hierarchy_root: &Path) -> Option<PathBuf> {
    let controller = hierarchy_root.file_name()?.to_str()?.to_string();
    let text = std::fs::read_to_string("/proc/thread-self/cgroup").ok()?;
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        ctrls
            .split(',')
            .any(|c| c == controller)
            .then(|| hierarchy_root.join(path.trim_start_matches('/')))
    })
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

impl RunCgroup {
    /// Create the groups for `run_id` with `limits`, or say why it cannot be done.
    pub fn create(run_id: &str, limits: &Limits) -> Result<RunCgroup, String> {
        let name = format!("sng-{run_id}");
        let unified = Path::new(ROOT).join("cgroup.controllers");
        let mut cg = RunCgroup {
            dirs: Vec::new(),
            v1: false,
        };
        if std::fs::read_to_string(&unified).is_ok_and(|c| c.contains("memory")) {
            let dir = Path::new(ROOT).join(&name);
            std::fs::create_dir(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            cg.dirs.push(dir.clone());
            if let Some(m) = limits.memory_bytes {
                write(&dir.join("memory.max"), &m.to_string())
                    .map_err(|e| format!("memory.max: {e}"))?;
                let _ = write(&dir.join("memory.swap.max"), "0");
            }
            if let Some(c) = limits.cpu_millis {
                write(&dir.join("cpu.max"), &format!("{} 100000", c.max(1) * 100))
                    .map_err(|e| format!("cpu.max: {e}"))?;
            }
            return Ok(cg);
        }
        cg.v1 = true;
        if let Some(m) = limits.memory_bytes {
            let dir = Path::new(ROOT).join("memory").join(&name);
            std::fs::create_dir(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            cg.dirs.push(dir.clone());
            write(&dir.join("memory.limit_in_bytes"), &m.to_string())
                .map_err(|e| format!("memory.limit_in_bytes: {e}"))?;
            let _ = write(&dir.join("memory.memsw.limit_in_bytes"), &m.to_string());
        }
        if let Some(c) = limits.cpu_millis {
            let dir = Path::new(ROOT).join("cpu").join(&name);
            std::fs::create_dir(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            cg.dirs.push(dir.clone());
            write(&dir.join("cpu.cfs_period_us"), "100000")
                .map_err(|e| format!("cpu.cfs_period_us: {e}"))?;
            write(&dir.join("cpu.cfs_quota_us"), &(c.max(1) * 100).to_string())
                .map_err(|e| format!("cpu.cfs_quota_us: {e}"))?;
        }
        Ok(cg)
    }

    /// Spawn a process inside the groups. With cgroup v1 the calling thread joins the groups
    /// for the spawn only, so the child starts inside (no window where it could escape); with v2
    /// the child is moved right after the spawn.
    pub fn spawn_inside<T>(
        &self,
        spawn: impl FnOnce() -> std::io::Result<T>,
        pid_of: impl Fn(&T) -> Option<u32>,
    ) -> std::io::Result<T> {
        if self.v1 {
            let tid = thread_id().ok_or_else(|| std::io::Error::other("no /proc/thread-self"))?;
            let mut back = Vec::new();
            for d in &self.dirs {
                let hierarchy = d.parent().expect("group under a hierarchy");
                let original = current_group(hierarchy).unwrap_or_else(|| hierarchy.to_path_buf());
                write(&d.join("tasks"), &tid)?;
                back.push(original);
            }
            let child = spawn();
            for original in back {
                let _ = write(&original.join("tasks"), &tid);
            }
            return child;
        }
        let child = spawn()?;
        if let Some(pid) = pid_of(&child) {
            for d in &self.dirs {
                write(&d.join("cgroup.procs"), &pid.to_string())?;
            }
        }
        Ok(child)
    }

    /// Whether the memory limit was hit (an OOM kill happened in the group).
    pub fn oom_killed(&self) -> bool {
        let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
        let counter = |text: &str, key: &str| {
            text.lines().any(|l| {
                l.strip_prefix(key)
                    .is_some_and(|n| n.trim().parse::<u64>().is_ok_and(|n| n > 0))
            })
        };
        self.dirs.iter().any(|d| {
            counter(&read(d, "memory.events"), "oom_kill ")
                || counter(&read(d, "memory.oom_control"), "oom_kill ")
                || counter(&read(d, "memory.failcnt"), "")
                || counter(&read(d, "memory.memsw.failcnt"), "")
        })
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        for d in &self.dirs {
            // Empty once every process of the run has exited.
            let _ = std::fs::remove_dir(d);
        }
    }
}
