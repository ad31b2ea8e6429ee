//! `daemonsync apply`: converge once, showing progress, then exit with a summary.

use super::source::{Loaded, SourceArgs, for_cluster, load, rendered_line};
use super::{EXIT_OK, parse_now};
use crate::apply::{self, ApplyOptions, ApplyReport, Outcome, Progress, ProgressUpdate};
use crate::cluster::{ClusterSpec, RecordSource, RecordWriter};
use crate::manifest::{LoadOptions, duration};
use crate::model::{KubeVersion, Timestamp};
use crate::plan::Policy;
use crate::report;
use crate::report::apply::{ApplyFormat, ApplyReportOptions, clock};
use crate::source::ManifestSource;
use anyhow::{Result, anyhow, bail};
use jiff::SignedDuration;
use std::io::{IsTerminal, Write};

/// Exit code of `apply`: the rollout halted (and nothing else was left to finish), or did not
/// converge.
pub const EXIT_HALTED: i32 = 3;
/// Exit code of `apply`: every DaemonSet that is neither paused nor frozen converged; the
/// paused ones (their record carries `daemonsync.io/paused: "true"`) replaced no pod and got
/// only the pods of nodes that had none, the frozen ones (`daemonsync.io/frozen: "true"`) got
/// nothing.
pub const EXIT_PAUSED: i32 = 4;
/// Exit code of `apply`: a rollout waits at a manual pause of its rollout policy
/// (`daemonsync promote` continues it); every other DaemonSet converged.
pub const EXIT_AWAITING_PROMOTION: i32 = 5;

pub(crate) const APPLY_HELP: &str = "\
Examples:
  # Roll ./deploy out to the cluster of the current kubeconfig context (after
  # `kubectl apply -f examples/deploy/crd.yaml -f examples/deploy/rbac.yaml`)
  daemonsync apply --manifests ./deploy

  # Roll the example DaemonSets, as committed at HEAD, out to the simulated demo fleet
  daemonsync apply --repo . --path examples/manifests --cluster sim:examples/sim/demo.yaml

  # The same from the working tree
  daemonsync apply --manifests examples/manifests --cluster sim:examples/sim/demo.yaml

  # Only show what the first step would do
  daemonsync apply --manifests ./deploy --cluster sim:fleet.yaml --dry-run

  # Roll out although a DaemonSet has a field its schema lacks: each is printed as a warning
  # and dropped, as `kubectl apply --validate=warn` does (the default, strict, refuses it)
  daemonsync apply --manifests ./deploy --cluster sim:fleet.yaml --validate=warn

DaemonSets are independent: one that halts stops only its own rollout; the others are
finished, then apply exits naming the halted ones.

Exit status:
  0  converged (or --dry-run)
  1  error (bad manifests, an unknown field with --validate=strict, bad cluster file, an
     unreachable cluster or a missing CRD, refused prune, failed writes), or some
     DaemonSets halted while the others converged (the halted ones are named)
  3  halted: new pods stayed unavailable past --progress-deadline and no other DaemonSet
     was left to finish, or the rollout could not finish (timeout, nothing left that would
     change)
  4  paused or frozen: the DaemonSets whose record carries daemonsync.io/paused: \"true\"
     replaced no pod and only got pods on the nodes that had none (of the stable revision),
     those whose rollout was aborted got nothing, and those whose record carries
     daemonsync.io/frozen: \"true\" got nothing at all; all others converged
  5  waiting at a manual pause of a rollout policy (docs/progressive.md): the canary or a
     wave is done and `daemonsync promote NAME -n NAMESPACE` continues; all others
     converged. --auto-promote passes manual pauses instead";

/// Output formats of `apply`'s final state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// For people: one line per DaemonSet, then the nodes that need attention.
    Table,
    /// The table, then every node of every DaemonSet with its state and reason.
    Wide,
    /// A `daemonsync.io/v1alpha1` ApplyReport: how it ended, every write in order (cluster
    /// time, verb, pod, node, revision, rollout phase), and the Plan of the final state.
    Json,
}

/// Flags of `daemonsync apply`.
#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// Where the manifests come from.
    #[command(flatten)]
    pub source: SourceArgs,
    /// The cluster: `kube` (the current kubeconfig context, or the in-cluster config; the
    /// default), `kube:CONTEXT`, `sim:FILE` (a simulated cluster, see docs/sim.md) or
    /// `snapshot:FILE` (read-only: only --dry-run works).
    #[arg(long, short = 'c', value_name = "CLUSTER", default_value = "kube")]
    pub cluster: ClusterSpec,
    /// Plan the first step and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Halt when new pods stay unavailable this long on Ready nodes (e.g. 10m, 90s).
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = duration::parse)]
    pub progress_deadline: SignedDuration,
    /// Give up after this long (cluster time; simulated time on a sim cluster).
    #[arg(long, value_name = "DURATION", value_parser = duration::parse)]
    pub timeout: Option<SignedDuration>,
    /// Delete the pods of managed DaemonSets that are no longer in the manifests.
    #[arg(long)]
    pub prune: bool,
    /// Allow --prune to remove more than one DaemonSet at once.
    #[arg(long, requires = "prune")]
    pub allow_mass_prune: bool,
    /// Output format of the final state.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The instant a snapshot is judged at (RFC 3339); defaults to now. A sim has its own clock.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// Nodes listed per state in the table before "... and N more".
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub max_nodes: usize,
    /// Pass every manual pause of a rollout policy (canary-pause, wave-pause) as if promoted:
    /// for demos and tests.
    #[arg(long)]
    pub auto_promote: bool,
    /// Write DaemonSets that a `daemonsync sync` daemon drives from another source: the
    /// daemon is paused for each of them first (as `daemonsync pause` does; an event on the
    /// record says so) and `daemonsync resume` gives it back. Also writes through a paused
    /// record. Without it, such a DaemonSet is refused and nothing is written for it.
    #[arg(long)]
    pub force: bool,
}

/// `daemonsync apply` as its flags say, converted once: where the manifests come from, the
/// cluster, the executor's options and how the report is shown.
#[derive(Debug, Clone)]
pub struct ApplyCommandOptions {
    /// Where the manifests come from.
    pub source: ManifestSource,
    /// How they are read (for `--kube-version`, or v1.35 until the cluster says).
    pub load: LoadOptions,
    /// `--kube-version`: read them for it instead of the cluster's version.
    pub kube_version: Option<KubeVersion>,
    /// The cluster.
    pub cluster: ClusterSpec,
    /// The instant a snapshot is judged at.
    pub now: Timestamp,
    /// The executor's options; the record's source is the loaded one's, with `apply` as its
    /// writer.
    pub apply: ApplyOptions,
    /// The final report; whether the cluster is simulated is known once connected.
    pub report: ApplyReportOptions,
}

impl ApplyArgs {
    /// Validates the flags into [`ApplyCommandOptions`], before anything is read.
    pub fn options(&self) -> Result<ApplyCommandOptions> {
        let now = match &self.now {
            Some(s) => parse_now(s)?,
            None => Timestamp::now(),
        };
        let apply = ApplyOptions {
            dry_run: self.dry_run,
            progress_deadline: self.progress_deadline,
            prune: self.prune,
            allow_mass_prune: self.allow_mass_prune,
            policy: Policy {
                auto_promote: self.auto_promote,
                ..Policy::default()
            },
            timeout: self.timeout,
            source: RecordSource {
                writer: Some(RecordWriter::apply()),
                ..RecordSource::default()
            },
            force: self.force,
            ..ApplyOptions::default()
        };
        let report = ApplyReportOptions {
            format: match self.output {
                Output::Table => ApplyFormat::Table,
                Output::Wide => ApplyFormat::Wide,
                Output::Json => ApplyFormat::Json,
            },
            color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
            max_nodes: self.max_nodes,
            simulated: false,
            progress_deadline: self.progress_deadline,
            pruned: self.prune && !self.dry_run,
            // A sim: cluster starts afresh each run: it keeps no record to promote.
            promote_cluster: (!matches!(self.cluster, ClusterSpec::Sim(_)))
                .then(|| self.cluster.to_string()),
        };
        Ok(ApplyCommandOptions {
            source: self.source.source(),
            load: self.source.load_options(),
            kube_version: self.source.load.kube_version,
            cluster: self.cluster.clone(),
            now,
            apply,
            report,
        })
    }
}

/// The desired DaemonSets of `apply`: from a git repository at a ref (`--repo`), or the
/// manifests on disk. Any error (unreadable source, an invalid DaemonSet, none at all) stops
/// `apply` before it observes or writes anything, so nothing is ever pruned on a bad source.
pub fn load_desired(opts: &ApplyCommandOptions) -> Result<Loaded> {
    load_desired_for(opts, None)
}

/// [`load_desired`] for a cluster that runs `reported` (rendering and validation are for
/// `--kube-version`, else that version).
pub fn load_desired_for(
    opts: &ApplyCommandOptions,
    reported: Option<KubeVersion>,
) -> Result<Loaded> {
    let mut load_opts = opts.load.clone();
    let target = for_cluster(&mut load_opts, opts.kube_version, reported)?;
    let loaded = load(&opts.source, &load_opts)?;
    let rendered = rendered_line(loaded.rendered.as_deref(), &target);
    for line in [&loaded.line, &rendered].into_iter().flatten() {
        eprintln!("{line}");
    }
    Ok(loaded)
}

/// Runs `daemonsync apply`; returns the exit code.
pub async fn run(args: &ApplyArgs) -> Result<i32> {
    execute(args.options()?).await
}

/// Applies as `opts` say and prints the report; returns the exit code.
pub async fn execute(mut opts: ApplyCommandOptions) -> Result<i32> {
    // The cluster's version decides how the manifests are rendered and validated; nothing
    // else is read from the cluster before the manifests are known to be good.
    let reported = match opts.kube_version {
        Some(_) => None,
        None => opts.cluster.version().await?,
    };
    let Loaded {
        desired, record, ..
    } = load_desired_for(&opts, reported)?;
    let dry_run = opts.apply.dry_run;
    let adopt = crate::cluster::kube::adoption_selectors(&desired);
    let mut cluster = opts.cluster.connect(opts.now, adopt).await?;
    if let crate::cluster::AnyCluster::Kube(live) = &mut cluster
        && !dry_run
        && desired.iter().any(|d| !d.config.is_empty())
    {
        // The copies of earlier revisions must be seen before the rollout completes, or
        // none would be collected.
        live.watch_config_copies().await?;
    }
    if cluster.is_read_only() && !dry_run {
        bail!("a snapshot cluster is read-only: add --dry-run, or use --cluster sim:FILE or kube");
    }
    opts.apply.source = RecordSource {
        writer: opts.apply.source.writer.take(),
        ..record
    };
    opts.report.simulated = cluster.is_simulated();
    if !dry_run {
        let names: Vec<&str> = desired
            .iter()
            .filter_map(|d| d.daemonset.metadata.name.as_deref())
            .collect();
        eprintln!(
            "Applying {} DaemonSet(s) ({}) to {}",
            names.len(),
            names.join(", "),
            opts.cluster
        );
    }
    let mut progress = LineProgress::new(dry_run);
    let report = apply::apply(&mut cluster, &desired, &opts.apply, &mut progress).await;
    if let crate::cluster::AnyCluster::Kube(live) = &cluster {
        live.flush_events().await;
    }
    progress.finish();
    let report = report.map_err(|e| anyhow!(e))?;
    print_report(&report, &opts.report)?;
    if super::plan::report_cluster_errors(&report.plan) {
        return Ok(super::EXIT_ERROR);
    }
    Ok(exit_code(&report, desired.len()))
}

/// The exit status for how the apply ended, `daemonsets` the number applied.
fn exit_code(report: &ApplyReport, daemonsets: usize) -> i32 {
    match report.outcome {
        Outcome::Converged | Outcome::DryRun => EXIT_OK,
        Outcome::Paused => EXIT_PAUSED,
        Outcome::AwaitingPromotion => EXIT_AWAITING_PROMOTION,
        // The cluster refuses a DaemonSet's pods: it cannot converge until the policy or
        // the template changes, whatever the others did.
        Outcome::Halted if !report.refused.is_empty() => EXIT_HALTED,
        // Others converged beside the halted ones: a partial apply, an error to look at.
        Outcome::Halted if report.halted.len() < daemonsets => super::EXIT_ERROR,
        // Nothing was written for a DaemonSet another controller runs: an error to look at.
        Outcome::Blocked => super::EXIT_ERROR,
        _ => EXIT_HALTED,
    }
}

/// Progress as plain lines on stderr, one per change; on a terminal, a bar as well.
struct LineProgress {
    last: String,
    quiet: bool,
    /// When the last line was printed (cluster time since the start), and the latest line
    /// not printed yet.
    printed_at: Option<SignedDuration>,
    pending: Option<String>,
    bar: Option<indicatif::ProgressBar>,
}

impl LineProgress {
    fn new(quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new(0);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40.green/white} {pos}/{len} nodes up to date  {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        LineProgress {
            last: String::new(),
            quiet,
            printed_at: None,
            pending: None,
            bar,
        }
    }

    fn print(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    fn finish(&mut self) {
        if let Some(text) = self.pending.take() {
            self.print(&text);
        }
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Progress for LineProgress {
    fn update(&mut self, u: &ProgressUpdate<'_>) {
        if self.quiet {
            return;
        }
        // At most one line per interval (and one when the rollout ends): a line per pod event would
        // drown the reader on a large fleet.
        let step = format!("step {}", u.step);
        let parts: Vec<String> = u
            .daemonsets
            .iter()
            .map(|d| {
                let mut s = format!("{} {}/{} done", d.name, d.done, d.desired);
                if d.in_progress > 0 {
                    s.push_str(&format!(", {} in progress", d.in_progress));
                }
                if d.failed > 0 {
                    s.push_str(&format!(", {} failed", d.failed));
                }
                if d.node_problems > 0 {
                    s.push_str(&format!(", {} node problem", d.node_problems));
                }
                s
            })
            .collect();
        let line = format!("{step}: {}", parts.join(" · "));
        if self.last == line {
            return;
        }
        let (done, total) = u
            .daemonsets
            .iter()
            .fold((0, 0), |(a, b), d| (a + d.done, b + d.desired));
        let text = format!("[{:>5}] {line}", clock(u.elapsed));
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(format!("step {} at {}", u.step, clock(u.elapsed)));
        }
        // At most one line per PRINT_EVERY of cluster time; the last one is printed at the end.
        if self.printed_at.is_none_or(|t| u.elapsed - t >= PRINT_EVERY) {
            self.print(&text);
            self.printed_at = Some(u.elapsed);
            self.pending = None;
        } else {
            self.pending = Some(text);
        }
        self.last = line;
    }
}

/// Least cluster time between two progress lines.
const PRINT_EVERY: SignedDuration = SignedDuration::from_secs(10);

fn print_report(r: &ApplyReport, opts: &ApplyReportOptions) -> Result<()> {
    let (out, err) = report::apply::render(r, opts);
    eprint!("{err}");
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Desired;
    use clap::Parser;

    fn args(extra: &[&str]) -> ApplyArgs {
        let root = env!("CARGO_MANIFEST_DIR");
        let manifests = format!("{root}/examples/manifests");
        let mut argv = vec!["daemonsync", "apply", "--manifests", &manifests];
        argv.extend(extra);
        match crate::cli::Cli::try_parse_from(argv)
            .expect("flags")
            .command
        {
            crate::cli::Command::Apply(a) => a,
            _ => unreachable!(),
        }
    }

    /// The report options of a simulated cluster, without colours.
    fn view(opts: &ApplyCommandOptions) -> ApplyReportOptions {
        ApplyReportOptions {
            simulated: true,
            color: false,
            ..opts.report.clone()
        }
    }

    fn demo(extra: &[&str], file: &str) -> (ApplyReport, String) {
        let cluster = format!("sim:{}/examples/sim/{file}", env!("CARGO_MANIFEST_DIR"));
        let mut all = vec!["--cluster", &cluster];
        all.extend(extra);
        let a = args(&all);
        let mut sim =
            crate::block_on(a.cluster.connect(Timestamp::now(), Vec::new())).expect("sim");
        let opts = a.options().expect("options");
        let desired = load_desired(&opts).expect("manifests").desired;
        let r = crate::block_on(apply::apply(
            &mut sim,
            &desired,
            &opts.apply,
            &mut apply::NoProgress,
        ))
        .expect("apply");
        let (out, _) = report::apply::render(&r, &view(&opts));
        (r, out)
    }

    #[test]
    fn the_demo_converges_and_names_the_node_problem() {
        let (r, out) = demo(&[], "demo.yaml");
        assert_eq!(r.outcome, Outcome::Converged, "{out}");
        assert!(out.contains("Converged in "), "{out}");
        assert!(out.contains("(simulated)"), "{out}");
        assert!(out.contains("node flaky-1 is NotReady"), "{out}");
        assert!(out.contains("UP-TO-DATE"), "{out}");
    }

    #[test]
    fn the_seven_node_cluster_installs_everything() {
        let (r, out) = demo(&[], "seven-nodes.yaml");
        assert_eq!(r.outcome, Outcome::Converged, "{out}");
        assert!(r.creates > 0 && r.deletes == 0, "{out}");
    }

    #[test]
    fn a_crash_looping_image_halts_the_demo_at_once_and_names_the_nodes() {
        let (r, out) = demo(&["--progress-deadline", "2m"], "demo-failing.yaml");
        assert_eq!(r.outcome, Outcome::Halted, "{out}");
        assert!(out.contains("Failing nodes"), "{out}");
        assert!(out.contains("CrashLoopBackOff in container agent"), "{out}");
        assert!(out.contains("node flaky-1 is NotReady"), "{out}");
        assert!(
            out.contains("Halted after 0:")
                && out.contains("failed (CrashLoopBackOff in container agent)"),
            "halted at the first crash, not at the deadline: {out}"
        );
    }

    #[test]
    fn manifests_can_come_from_git_at_head() {
        let root = env!("CARGO_MANIFEST_DIR");
        if !std::path::Path::new(root).join(".git").exists() {
            return; // an exported tree without history
        }
        let from_git = crate::cli::Cli::try_parse_from([
            "daemonsync",
            "apply",
            "--repo",
            root,
            "--path",
            "examples/manifests",
            "-c",
            "sim:x",
        ])
        .expect("flags");
        let crate::cli::Command::Apply(a) = from_git.command else {
            unreachable!()
        };
        let names = |d: Vec<Desired>| -> Vec<String> {
            d.into_iter()
                .filter_map(|d| d.daemonset.metadata.name)
                .collect()
        };
        let git = names(
            load_desired(&a.options().expect("options"))
                .expect("git source")
                .desired,
        );
        let dir = names(
            load_desired(&args(&["-c", "sim:x"]).options().expect("options"))
                .expect("directory")
                .desired,
        );
        assert_eq!(git.len(), 3);
        let (mut git, mut dir) = (git, dir);
        git.sort();
        dir.sort();
        assert_eq!(git, dir);
    }

    #[test]
    fn json_output_keeps_stdout_machine_readable() {
        let (r, _) = demo(&[], "seven-nodes.yaml");
        let a = args(&["--cluster", "sim:x", "-o", "json"]);
        let (out, err) = report::apply::render(&r, &view(&a.options().expect("options")));
        let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON");
        assert_eq!(v["kind"], "ApplyReport");
        assert_eq!(v["plan"]["kind"], "Plan");
        assert_eq!(v["outcome"], "Converged");
        let writes = v["writes"].as_array().expect("writes");
        assert_eq!(writes.len(), r.creates + r.deletes);
        assert!(
            writes
                .iter()
                .all(|w| w["verb"] == "create" || w["verb"] == "delete")
        );
        assert!(err.contains("Converged in 0:04 (simulated)"), "{err}");
    }

    #[test]
    fn dry_run_reports_without_writing() {
        let (r, out) = demo(&["--dry-run"], "demo.yaml");
        assert_eq!(r.outcome, Outcome::DryRun);
        assert_eq!(r.creates + r.deletes, 0);
        assert!(out.contains("Dry run"), "{out}");
    }

    #[test]
    fn flags_are_validated() {
        let bad = crate::cli::Cli::try_parse_from([
            "daemonsync",
            "apply",
            "-m",
            "x",
            "-c",
            "sim:x",
            "--progress-deadline",
            "soon",
        ]);
        assert!(bad.is_err());
        let bad = crate::cli::Cli::try_parse_from([
            "daemonsync",
            "apply",
            "-m",
            "x",
            "-c",
            "sim:x",
            "--allow-mass-prune",
        ]);
        assert!(bad.is_err(), "--allow-mass-prune requires --prune");
        assert!("kube:".parse::<ClusterSpec>().is_err());
    }

    #[test]
    fn a_snapshot_needs_dry_run() {
        let snap = format!(
            "snapshot:{}/fixtures/snapshots/seven-nodes.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let err = crate::block_on(run(&args(&["--cluster", &snap])))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("read-only") && err.contains("--dry-run"),
            "{err}"
        );
    }
}
