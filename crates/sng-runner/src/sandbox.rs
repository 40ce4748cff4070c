//! The sandbox of engine runs. With bubblewrap: read-only system, private /tmp and /proc,
//! only the run directory (and the tenant's plugin cache) writable, no view of the data
//! directory or of other runs, environment cleared except what the run needs.
//! Without bubblewrap: a plain process with a cleared environment (say so in the logs).

use std::path::{Path, PathBuf};

use tokio::process::Command;

/// How runs are isolated.
#[derive(Debug, Clone, Default)]
pub struct Sandbox {
    /// Path of `bwrap`, when available.
    pub bwrap: Option<PathBuf>,
    /// Extra read-only paths visible inside (e.g. a provider mirror).
    pub read_only: Vec<PathBuf>,
    /// Extra writable paths (operator-chosen, e.g. where a test provider writes files).
    pub read_write: Vec<PathBuf>,
}

/// System paths bound read-only when they exist.
const SYSTEM_RO: &[&str] = &[
    "/usr",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
];

impl Sandbox {
    /// Use bubblewrap when it is on the machine.
    pub fn detect() -> Sandbox {
        let bwrap = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_file());
        Sandbox {
            bwrap,
            ..Sandbox::default()
        }
    }

    /// Whether runs are isolated by bubblewrap.
    pub fn isolated(&self) -> bool {
        self.bwrap.is_some()
    }

    /// The command running `program args` in `cwd`, with exactly `env`.
    /// `engine_root` (read-only) and `writable` paths are visible at their own paths.
    /// `hostname` names the sandbox (the engine writes `user@hostname` as the holder of the
    /// state locks it takes; without bubblewrap the machine's name stays).
    #[allow(clippy::too_many_arguments)]
    pub fn command(
        &self,
        program: &Path,
        args: &[String],
        cwd: &Path,
        env: &[(String, String)],
        engine_root: &Path,
        writable: &[&Path],
        hostname: Option<&str>,
    ) -> Command {
        let Some(bwrap) = &self.bwrap else {
            let mut cmd = Command::new(program);
            cmd.args(args)
                .current_dir(cwd)
                .env_clear()
                .envs(env.iter().map(|(k, v)| (k, v)));
            return cmd;
        };
        let mut a: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
        for p in SYSTEM_RO {
            if Path::new(p).exists() {
                push(&["--ro-bind", p, p]);
            }
        }
        for (link, target) in [
            ("/lib", "usr/lib"),
            ("/lib64", "usr/lib64"),
            ("/bin", "usr/bin"),
            ("/sbin", "usr/sbin"),
        ] {
            if Path::new("/usr")
                .join(target.trim_start_matches("usr/"))
                .exists()
            {
                push(&["--symlink", target, link]);
            }
        }
        push(&["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]);
        let root = engine_root.display().to_string();
        if !engine_root.starts_with("/usr") {
            push(&["--ro-bind", &root, &root]);
        }
        for p in &self.read_only {
            let p = p.display().to_string();
            push(&["--ro-bind-try", &p, &p]);
        }
        for p in writable
            .iter()
            .map(|p| p.to_path_buf())
            .chain(self.read_write.iter().cloned())
        {
            let p = p.display().to_string();
            push(&["--bind", &p, &p]);
        }
        // Network stays shared: the state backend, registries and providers' APIs are reached over it.
        push(&["--unshare-all", "--share-net", "--die-with-parent"]);
        if let Some(h) = hostname {
            push(&["--hostname", h]);
        }
        push(&["--chdir", &cwd.display().to_string(), "--"]);
        a.push(program.display().to_string());
        a.extend(args.iter().cloned());
        // The environment goes through bwrap's own (cleared) environment, never its argument
        // vector: arguments are visible to every local user in /proc/PID/cmdline.
        let mut cmd = Command::new(bwrap);
        cmd.args(a)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)));
        cmd
    }
}
