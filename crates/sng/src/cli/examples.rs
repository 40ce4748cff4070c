//! An example in the `--help` of every command, kept in one table keyed by the command's path
//! (`"kind get"`), added to the clap tree by [`add`]. Commands that carry their own
//! `after_help` keep it.

/// `(path, examples)`: each line one command line, shown under `Examples:`.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "",
        "sng server --data-dir .sng &\n\
         export SNG_TOKEN=$(cat .sng/admin.token)\n\
         sng apply -f examples/pet.yaml\n\
         sng wait workspace pet --for condition=Ready\n\
         sng kind get workspaces",
    ),
    ("kind", "sng kind get workspaces\nsng kind delete workspace web --wait"),
    ("tenant", "sng tenant create acme\nsng tenant list"),
    ("token", "sng token create --role viewer\nsng token list"),
    ("run", "sng run get RUN_ID"),
    (
        "config",
        "sng --server https://sng.example:7373 --token $TOKEN config set-context prod\n\
         sng config use-context prod",
    ),
    (
        "module",
        "sng module push ./net oci://registry.example/modules/net --tag 1.2.0\n\
         sng module list oci://registry.example/modules/net",
    ),
    ("quarantine", "sng quarantine list\nsng quarantine discard PLAN_ID"),
    ("agent-pool", "sng agent-pool token create edge"),
    ("agent-pool token", "sng agent-pool token create edge\nsng agent-pool token list"),
    (
        "server",
        "sng server --data-dir /var/lib/sng --listen 0.0.0.0:7373\n\
         sng server --data-dir .sng --tls-cert server.crt --tls-key server.key\n\
         sng server --database postgres://sng@db:5432/sng --master-key-file /etc/sng/master.key",
    ),
    ("server rotate-master-key", "sng server rotate-master-key --data-dir /var/lib/sng"),
    (
        "server migrate",
        "sng server migrate --from-sqlite /var/lib/sng --database postgres://sng@db:5432/sng",
    ),
    (
        "agent",
        "SNG_AGENT_TOKEN=$(cat agent.token) sng agent --server https://sng.example:7373 --name edge-1",
    ),
    ("agent list", "sng agent list\nsng agent list -o wide"),
    (
        "apply",
        "sng apply -f examples/pet.yaml\nsng apply -f examples/\ncat ws.yaml | sng apply -f -",
    ),
    (
        "kind get",
        "sng kind get workspaces\nsng kind get workspace web -o yaml\nsng kind get ws -l team=a -o wide",
    ),
    (
        "kind delete",
        "sng kind delete workspace web --wait\nsng kind delete secret creds",
    ),
    (
        "tenant create",
        "sng tenant create acme\nsng tenant create prod --production\n\
         sng tenant create team-b --from examples/templates/team --set region=eu-west-1",
    ),
    ("tenant list", "sng tenant list"),
    (
        "tenant export",
        "sng tenant export acme -o acme.zip --passphrase-file pass.txt",
    ),
    (
        "tenant import",
        "sng tenant import acme.zip --passphrase-file pass.txt\n\
         sng tenant import acme.zip --as acme-copy --passphrase-file pass.txt",
    ),
    (
        "tenant delete",
        "sng tenant delete acme\nsng tenant delete prod --confirm prod",
    ),
    (
        "tenant freeze",
        "sng tenant freeze acme --reason \"incident 42: registry compromised\"\n\
         sng tenant freeze acme --reason \"release window closed\" --until 2h",
    ),
    ("tenant unfreeze", "sng tenant unfreeze acme"),
    (
        "token create",
        "sng token create --role viewer --description dashboard\n\
         sng --tenant acme token create --role operator --expires 720h",
    ),
    ("token list", "sng token list"),
    ("token revoke", "sng token revoke 4f9c1d2e-…"),
    (
        "wait",
        "sng wait workspace web --for condition=Ready --timeout 10m",
    ),
    (
        "approve",
        "sng approve workspace web $(sng kind get ws web -o json | jq -r .status.lastPlan.id)\n\
         sng approve policyexception allow-destroy-net",
    ),
    ("plan", "sng plan -f ws.yaml\nsng plan -f examples/ -o json"),
    ("rollback", "sng rollback workspace web --to RUN_ID"),
    ("explain", "sng explain workspace web"),
    ("drift", "sng drift workspace web"),
    ("refresh", "sng refresh workspace web"),
    ("cancel", "sng cancel workspace web"),
    ("runs", "sng runs workspace web\nsng runs workspace web --limit 5 -o json"),
    ("logs", "sng logs RUN_ID\nsng logs RUN_ID -f"),
    ("run get", "sng run get RUN_ID\nsng run get RUN_ID -o json"),
    (
        "config set-context",
        "sng --server https://sng.example:7373 --token $TOKEN --tenant acme config set-context acme",
    ),
    ("config use-context", "sng config use-context acme"),
    ("config current-context", "sng config current-context"),
    ("config get-contexts", "sng config get-contexts"),
    (
        "module push",
        "sng module push ./net oci://registry.example/modules/net --tag 1.2.0\n\
         sng module push ./net oci://localhost:5000/modules/net --insecure --dry-run",
    ),
    ("module list", "sng module list oci://registry.example/modules/net"),
    (
        "module inspect",
        "sng module inspect oci://registry.example/modules/net --tag 1.2.0 -o json",
    ),
    ("module pull", "sng module pull oci://registry.example/modules/net ./net --tag 1.2.0"),
    (
        "events",
        "sng events --workspace web --since 2h\nsng events --type run.completed -o json",
    ),
    ("deadletters", "sng deadletters\nsng deadletters -o json"),
    ("deadletters replay", "sng deadletters replay DEAD_LETTER_ID"),
    ("audit", "sng audit --workspace web"),
    ("quarantine list", "sng quarantine list"),
    ("quarantine discard", "sng quarantine discard PLAN_ID"),
    ("schema", "sng schema workspace > workspace.schema.json"),
    (
        "agent-pool token create",
        "sng agent-pool token create edge --description \"rack 4\" > agent.token",
    ),
    ("agent-pool token list", "sng agent-pool token list"),
    ("agent-pool token revoke", "sng agent-pool token revoke TOKEN_ID"),
    ("report", "sng report balance --since 24h"),
    ("report balance", "sng report balance --since 24h\nsng report balance -o json"),
    (
        "audit export",
        "sng audit export --since 2026-12-01T00:00:00Z -o jsonl > audit.jsonl",
    ),
    ("audit verify", "sng audit verify -f audit.jsonl"),
    (
        "discard",
        "sng discard workspace web $(sng kind get ws web -o json | jq -r .status.lastPlan.id)",
    ),
];

/// The examples of the command at `path` (its names below `sng`, space-separated).
pub fn of(path: &str) -> Option<&'static str> {
    EXAMPLES.iter().find(|(p, _)| *p == path).map(|(_, e)| *e)
}

/// `cmd` with the examples of [`EXAMPLES`] in the help of each of its commands.
pub fn add(cmd: clap::Command) -> clap::Command {
    add_at(cmd, "")
}

fn add_at(mut cmd: clap::Command, path: &str) -> clap::Command {
    if cmd.get_after_help().is_none() {
        if let Some(lines) = of(path) {
            let text: String = lines.lines().map(|l| format!("\n  {l}")).collect();
            cmd = cmd.after_help(format!("Examples:{text}"));
        }
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    for name in names {
        let sub = if path.is_empty() {
            name.clone()
        } else {
            format!("{path} {name}")
        };
        cmd = cmd.mut_subcommand(&name, |c| add_at(c, &sub));
    }
    cmd
}

/// Every command of `cmd` (`sng` itself as the empty path), with its long help text.
#[cfg(test)]
pub fn leaves(cmd: &clap::Command) -> Vec<(String, String)> {
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, String)>) {
        out.push((path.to_string(), cmd.clone().render_long_help().to_string()));
        for sub in cmd.get_subcommands() {
            let p = if path.is_empty() {
                sub.get_name().to_string()
            } else {
                format!("{path} {}", sub.get_name())
            };
            walk(sub, &p, out);
        }
    }
    let mut out = Vec::new();
    walk(cmd, "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command, its groups and `sng` itself, shows an example in its `--help`.
    #[test]
    fn every_command_has_an_example() {
        let leaves = leaves(&crate::cli::command());
        assert!(leaves.len() > 30, "{}", leaves.len());
        let missing: Vec<&str> = leaves
            .iter()
            .filter(|(_, help)| !help.contains("Example"))
            .map(|(path, _)| path.as_str())
            .collect();
        assert!(missing.is_empty(), "no example in the help of: {missing:?}");
    }

    /// Every example names a command that exists.
    #[test]
    fn every_example_is_of_a_command() {
        let cmd = crate::cli::command();
        for (path, lines) in EXAMPLES {
            let mut c = &cmd;
            for word in path.split(' ').filter(|w| !w.is_empty()) {
                c = c
                    .find_subcommand(word)
                    .unwrap_or_else(|| panic!("no command `{path}`"));
            }
            assert!(lines.contains("sng "), "{path}");
        }
    }
}
