//! The cluster at its start: the system namespaces and the sim file's, the `ManagedDaemonSet`
//! CRD, the sim file's nodes, and the DaemonSets already running — `running:` ones as
//! daemonsync would have left them (a record, pods owned by it), `builtin:` ones as the
//! built-in controller runs them (an `apps/v1` DaemonSet, its ControllerRevision, pods owned
//! by it). Pods that were running at the start have run, ready, for an hour.

use super::kinds::Kind;
use super::world::{World, WriteParams};
use crate::NodeSim;
use crate::config::SimConfig;
use crate::plan::Desired;
use anyhow::{Context as _, Result, anyhow};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The ManagedDaemonSet CRD, installed at start-up.
pub const CRD_YAML: &str = include_str!("../../../../examples/deploy/crd.yaml");

/// Namespaces every cluster has.
const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// The field manager of what the cluster itself writes at start-up.
pub const BOOT_MANAGER: &str = "daemonsync-sim";

impl World {
    /// The cluster `cfg` describes, at `cfg.start` (which the caller sets: the virtual
    /// clock's start in-process, the wall clock for `sim serve`), keeping `history` changes
    /// for watches.
    pub fn boot(mut cfg: SimConfig, history: usize) -> Result<World> {
        let running = std::mem::take(&mut cfg.running);
        let builtin = std::mem::take(&mut cfg.builtin);
        let seed = cfg.seed;
        let nodes = NodeSim::new(cfg)?;
        let since = nodes.running_since();
        let mut w = World::new(nodes, history, seed);
        w.engine.boot_time = Some(since);
        w.project();
        w.engine.boot_time = None;

        let crd: Value = serde_saphyr::from_str(CRD_YAML)
            .context("examples/deploy/crd.yaml is not valid YAML")?;
        let crds = w.kind("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        w.create(&crds, "", crd, &boot_params(), None)
            .map_err(|e| anyhow!("installing the CRD: {e}"))?;

        let load = |entries: &[crate::config::Running], versioned| -> Result<_> {
            let (mut desired, mut configs) = (Vec::new(), Vec::new());
            for r in entries {
                let (d, c) = crate::nodes::load_running(&r.manifest, versioned)?;
                desired.extend(d);
                configs.extend(c);
            }
            Ok((desired, configs))
        };
        let (managed, _) = load(&running, true)?;
        let (native, configs) = load(&builtin, false)?;
        w.create_namespaces(&managed, &native)?;
        w.install_managed(&managed)?;
        // The built-in controller's DaemonSets reference their config as it is, applied
        // with them.
        for c in &configs {
            w.ensure_namespace(&c.namespace, BTreeMap::new())?;
            w.create_config_object(c, &boot_params()).map_err(|e| {
                anyhow!(
                    "builtin: creating {} {}/{}: {e}",
                    c.kind.kind(),
                    c.namespace,
                    c.name
                )
            })?;
        }
        for d in &native {
            w.install_builtin(d, since)?;
        }
        w.reconcile();
        Ok(w)
    }

    /// The kind served at `group/version/plural`; only for kinds every cluster serves.
    pub(crate) fn kind(&self, group: &str, version: &str, plural: &str) -> Arc<Kind> {
        self.registry
            .find(group, version, plural)
            .unwrap_or_else(|| panic!("{group}/{version}/{plural} is a built-in kind"))
    }

    /// The system namespaces, the sim file's (with their labels) and those of the DaemonSets
    /// running at the start.
    fn create_namespaces(&mut self, managed: &[Desired], native: &[Desired]) -> Result<()> {
        let mut namespaces: BTreeMap<String, BTreeMap<String, String>> = SYSTEM_NAMESPACES
            .iter()
            .map(|s| (s.to_string(), BTreeMap::new()))
            .collect();
        for ns in self.nodes.cfg.namespaces.clone() {
            namespaces.entry(ns.name).or_default().extend(ns.labels);
        }
        for d in managed.iter().chain(native) {
            namespaces.entry(namespace_of(d)).or_default();
        }
        for (name, labels) in namespaces {
            self.ensure_namespace(&name, labels)?;
        }
        Ok(())
    }

    /// Creates namespace `name` with `labels` unless it exists.
    fn ensure_namespace(&mut self, name: &str, labels: BTreeMap<String, String>) -> Result<()> {
        let kind = self.kind("", "v1", "namespaces");
        if self.store.get(&kind.storage, "", name).is_some() {
            return Ok(());
        }
        let mut labels = labels;
        // The API server labels every namespace with its name.
        labels.insert("kubernetes.io/metadata.name".into(), name.to_string());
        self.create(
            &kind,
            "",
            json!({"metadata": {"name": name, "labels": labels}}),
            &boot_params(),
            None,
        )
        .map_err(|e| anyhow!("creating namespace {name}: {e}"))?;
        Ok(())
    }

    /// Starts `desired` as daemonsync would have left it after rolling it out: a record per
    /// DaemonSet (its spec, its status with the stable revision) and a ready pod owned by it
    /// on every node it selects.
    pub fn install_managed(&mut self, desired: &[Desired]) -> Result<()> {
        if desired.is_empty() {
            return Ok(());
        }
        let mds = self.kind(crate::plan::RECORD_GROUP, "v1alpha1", "manageddaemonsets");
        let mut uids = BTreeMap::new();
        for d in desired {
            let (ns, name) = (namespace_of(d), name_of(d));
            self.ensure_namespace(&ns, BTreeMap::new())?;
            let path = d.source.split(", document").next().unwrap_or_default();
            let record = json!({
                "apiVersion": crate::plan::RECORD_API_VERSION, "kind": crate::plan::RECORD_KIND,
                "metadata": {"name": name, "namespace": ns},
                "spec": {"daemonSet": d.daemonset,
                         "source": {"repository": "", "path": path, "commit": ""},
                         "mode": crate::plan::ownership::Choice::of(&d.daemonset).mode.as_str()},
            });
            let stored = match self.store.get(&mds.storage, &ns, &name) {
                Some(e) => e.object(),
                None => self
                    .create(&mds, &ns, record, &boot_params(), None)
                    .map_err(|e| anyhow!("creating the record of {ns}/{name}: {e}"))?,
            };
            let uid = str_of(&stored["metadata"]["uid"]);
            // The revision's config copies, owned by the record, as daemonsync writes them.
            let mut owner = crate::plan::render::PodOwner::record(&name).controller_reference();
            owner.uid = uid.clone();
            for copy in &d.config {
                self.create_config_copy(copy, owner.clone(), &boot_params())
                    .map_err(|e| anyhow!("creating {} of {ns}/{name}: {e}", copy.id()))?;
            }
            uids.insert((ns, name), uid);
        }
        let since = self.nodes.running_since();
        let specs: Vec<_> = desired
            .iter()
            .map(|d| crate::plan::DaemonSetSpec::compile(&d.daemonset))
            .collect();
        // Rendered one at a time: a fleet's pods are never all held twice.
        for (i, node) in self.nodes.running_pods(desired) {
            let mut pod = NodeSim::running_pod(&desired[i], &specs[i], &node);
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            for r in pod.metadata.owner_references.iter_mut().flatten() {
                if let Some(uid) = uids.get(&(ns.clone(), r.name.clone())) {
                    r.uid = uid.clone();
                }
            }
            super::engine::insert_running(self, pod, since)?;
        }
        self.project();
        self.write_record_statuses(desired, &mds);
        Ok(())
    }

    /// Fills the records' status with the planner's counters and the stable DaemonSet, as
    /// daemonsync would have left it after rolling them out.
    fn write_record_statuses(&mut self, desired: &[Desired], mds: &Kind) {
        let plan = crate::plan::plan(
            desired,
            &self.nodes.observed(),
            &crate::plan::Policy::default(),
            self.now(),
        );
        for ds in &plan.daemonsets {
            let mut status = serde_json::to_value(ds.status).unwrap_or_default();
            status["currentRevision"] = json!(ds.revision);
            // Rolled out to completion: the stable revision nodes held back by a rollout
            // policy keep running.
            if let Some(d) = desired
                .iter()
                .find(|d| name_of(d) == ds.name && namespace_of(d) == ds.namespace)
            {
                status["stable"] = serde_json::to_value(&d.daemonset).unwrap_or_default();
            }
            let _ = self.update(
                mds,
                &ds.namespace,
                &ds.name,
                true,
                json!({"status": status}),
                &boot_params(),
                None,
            );
        }
    }

    /// Starts `desired` as the built-in DaemonSet controller runs it: the `apps/v1`
    /// DaemonSet, and its pods on every node it selects, ready since `since`. The DaemonSet
    /// and its ControllerRevision date from `since` too, no younger than their pods.
    pub fn install_builtin(
        &mut self,
        desired: &Desired,
        since: crate::model::Timestamp,
    ) -> Result<()> {
        let kind = self.kind("apps", "v1", "daemonsets");
        let ns = namespace_of(desired);
        let mut body = serde_json::to_value(&desired.daemonset)?;
        if let Some(m) = body["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        self.create_dated(since, &kind, &ns, body, &boot_params())
            .map_err(|e| anyhow!("builtin: creating DaemonSet {ns}/{}: {e}", name_of(desired)))?;
        super::daemonset::start_running(self, &ns, &name_of(desired), since)
            .with_context(|| format!("builtin: DaemonSet {ns}/{}", name_of(desired)))
    }
}

fn boot_params() -> WriteParams {
    WriteParams {
        manager: BOOT_MANAGER.into(),
        ..WriteParams::default()
    }
}

fn namespace_of(d: &Desired) -> String {
    d.daemonset
        .metadata
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into())
}

fn name_of(d: &Desired) -> String {
    d.daemonset.metadata.name.clone().unwrap_or_default()
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}
