//! The resources served: one table row per kind (built-ins) plus the kinds registered by
//! CustomResourceDefinitions. Handlers are generic over this table; what differs between kinds
//! (storage shared by two API groups, tables, field selectors, side effects) is data here.

use serde_json::Value;
use std::sync::Arc;

/// How a kind's objects are shown in `kubectl get` (server-side Tables).
#[derive(Debug, Clone, PartialEq)]
pub enum TableKind {
    /// NAME READY STATUS RESTARTS AGE (+ IP NODE NOMINATED NODE READINESS GATES).
    Pods,
    /// NAME STATUS ROLES AGE VERSION (+ INTERNAL-IP …).
    Nodes,
    /// LAST SEEN TYPE REASON OBJECT MESSAGE.
    Events,
    /// NAME STATUS AGE.
    Namespaces,
    /// NAME HOLDER AGE.
    Leases,
    /// NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE (+ CONTAINERS
    /// IMAGES SELECTOR).
    DaemonSets,
    /// NAME CONTROLLER REVISION AGE.
    ControllerRevisions,
    /// NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE.
    PodDisruptionBudgets,
    /// NAME DATA AGE.
    ConfigMaps,
    /// NAME TYPE DATA AGE.
    Secrets,
    /// NAME SECRETS AGE.
    ServiceAccounts,
    /// A custom resource's printer columns.
    Printer(Vec<PrinterColumn>),
    /// NAME CREATED AT.
    Generic,
}

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    /// Header.
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub type_: String,
    /// Format hint.
    pub format: String,
    /// Description.
    pub description: String,
    /// 0: always shown; more: only with `-o wide`.
    pub priority: i64,
    /// Simple JSONPath (`.status.numberReady`).
    pub json_path: String,
}

/// What the server does besides storing objects of a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Plain storage.
    Plain,
    /// Pods: the simulator's scheduler and kubelet decide binding, status and termination.
    Pods,
    /// Nodes: edits go to the simulator (labels, taints, readiness, removal).
    Nodes,
    /// Namespaces: deleting one deletes its contents.
    Namespaces,
    /// CustomResourceDefinitions: register and unregister their resources.
    Crds,
    /// `apps/v1` DaemonSets: the registry strategy (defaults, validation, generations); the
    /// DaemonSet controller runs them.
    DaemonSets,
}

/// How objects are stored versus shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// As stored (only `apiVersion` follows the request).
    Native,
    /// `events.k8s.io/v1` shown from core/v1 events (one store, as in the real API server).
    EventsV1,
}

/// A served resource kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Kind {
    /// API group (empty for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural resource name (URL segment).
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names (`po`, `mds`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Has a `/status` subresource.
    pub status: bool,
    /// A built-in kind (accepts strategic merge patches).
    pub builtin: bool,
    /// Storage shared by every kind naming the same key.
    pub storage: String,
    /// Conversion between storage and this kind's shape.
    pub view: View,
    /// Server-side Table.
    pub table: TableKind,
    /// Field selectors supported besides `metadata.name` and `metadata.namespace`.
    pub fields: Vec<&'static str>,
    /// Side effects of writes.
    pub behaviour: Behaviour,
}

impl Kind {
    /// `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The URL of the collection (`/api/v1/namespaces/ns/pods`, `/apis/g/v/nodes`).
    pub fn path(&self, namespace: Option<&str>) -> String {
        let base = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        match namespace {
            Some(ns) if self.namespaced => format!("{base}/namespaces/{ns}/{}", self.plural),
            _ => format!("{base}/{}", self.plural),
        }
    }

    /// True when `field` may be used in a field selector on this kind.
    pub fn supports_field(&self, field: &str) -> bool {
        field == "metadata.name" || field == "metadata.namespace" || self.fields.contains(&field)
    }
}

#[allow(clippy::too_many_arguments)]
fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    kind: &str,
    namespaced: bool,
    short: &[&str],
    status: bool,
    table: TableKind,
    fields: &[&'static str],
    behaviour: Behaviour,
) -> Kind {
    Kind {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        namespaced,
        short_names: short.iter().map(|s| s.to_string()).collect(),
        categories: Vec::new(),
        status,
        builtin: true,
        storage: format!("{group}/{plural}"),
        view: View::Native,
        table,
        fields: fields.to_vec(),
        behaviour,
    }
}

const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

const EVENT_V1_FIELDS: &[&str] = &[
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "type",
];

/// The built-in kinds: core nodes, pods, namespaces, events, configmaps, secrets, service
/// accounts and pod templates; `events.k8s.io` events (the same store); `apps/v1` DaemonSets
/// and ControllerRevisions; `policy/v1` PodDisruptionBudgets; leases;
/// CustomResourceDefinitions.
pub fn builtins() -> Vec<Kind> {
    use Behaviour as B;
    let mut pods = builtin(
        "",
        "v1",
        "pods",
        "Pod",
        true,
        &["po"],
        true,
        TableKind::Pods,
        &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        B::Pods,
    );
    pods.categories = vec!["all".into()];
    let mut events_v1 = builtin(
        "events.k8s.io",
        "v1",
        "events",
        "Event",
        true,
        &["ev"],
        false,
        TableKind::Events,
        EVENT_V1_FIELDS,
        B::Plain,
    );
    events_v1.storage = "/events".into();
    events_v1.view = View::EventsV1;
    let mut daemonsets = builtin(
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        true,
        &["ds"],
        true,
        TableKind::DaemonSets,
        &[],
        B::DaemonSets,
    );
    daemonsets.categories = vec!["all".into()];
    let mut crds = builtin(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        true,
        TableKind::Generic,
        &[],
        B::Crds,
    );
    crds.categories = vec!["api-extensions".into()];
    vec![
        builtin(
            "",
            "v1",
            "nodes",
            "Node",
            false,
            &["no"],
            true,
            TableKind::Nodes,
            &["spec.unschedulable"],
            B::Nodes,
        ),
        pods,
        builtin(
            "",
            "v1",
            "namespaces",
            "Namespace",
            false,
            &["ns"],
            true,
            TableKind::Namespaces,
            &["status.phase"],
            B::Namespaces,
        ),
        builtin(
            "",
            "v1",
            "events",
            "Event",
            true,
            &["ev"],
            false,
            TableKind::Events,
            EVENT_FIELDS,
            B::Plain,
        ),
        events_v1,
        // apps/v1 DaemonSets, run by the built-in DaemonSet controller.
        daemonsets,
        builtin(
            "apps",
            "v1",
            "controllerrevisions",
            "ControllerRevision",
            true,
            &[],
            false,
            TableKind::ControllerRevisions,
            &[],
            B::Plain,
        ),
        builtin(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            true,
            &["pdb"],
            true,
            TableKind::PodDisruptionBudgets,
            &[],
            B::Plain,
        ),
        builtin(
            "",
            "v1",
            "configmaps",
            "ConfigMap",
            true,
            &["cm"],
            false,
            TableKind::ConfigMaps,
            &[],
            B::Plain,
        ),
        builtin(
            "",
            "v1",
            "secrets",
            "Secret",
            true,
            &[],
            false,
            TableKind::Secrets,
            &["type"],
            B::Plain,
        ),
        builtin(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            true,
            &["sa"],
            false,
            TableKind::ServiceAccounts,
            &[],
            B::Plain,
        ),
        builtin(
            "",
            "v1",
            "podtemplates",
            "PodTemplate",
            true,
            &[],
            false,
            TableKind::Generic,
            &[],
            B::Plain,
        ),
        builtin(
            "coordination.k8s.io",
            "v1",
            "leases",
            "Lease",
            true,
            &[],
            false,
            TableKind::Leases,
            &[],
            B::Plain,
        ),
        crds,
    ]
}

/// The kinds a CustomResourceDefinition defines (one per served version), or why it cannot be
/// served.
pub fn from_crd(crd: &Value) -> Result<Vec<Kind>, String> {
    let spec = &crd["spec"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let group = s(&spec["group"]);
    let names = &spec["names"];
    let plural = s(&names["plural"]);
    let kind = s(&names["kind"]);
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Err("spec.group, spec.names.plural and spec.names.kind are required".into());
    }
    let singular = match s(&names["singular"]) {
        x if x.is_empty() => kind.to_lowercase(),
        x => x,
    };
    let list = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let namespaced = s(&spec["scope"]) != "Cluster";
    let mut kinds = Vec::new();
    for version in spec["versions"].as_array().into_iter().flatten() {
        if version["served"] == Value::Bool(false) {
            continue;
        }
        let columns: Vec<PrinterColumn> = version["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| PrinterColumn {
                name: s(&c["name"]),
                type_: s(&c["type"]),
                format: s(&c["format"]),
                description: s(&c["description"]),
                priority: c["priority"].as_i64().unwrap_or(0),
                json_path: s(&c["jsonPath"]),
            })
            .collect();
        let columns = if columns.is_empty() {
            vec![PrinterColumn {
                name: "Age".into(),
                type_: "date".into(),
                format: String::new(),
                description: String::new(),
                priority: 0,
                json_path: ".metadata.creationTimestamp".into(),
            }]
        } else {
            columns
        };
        kinds.push(Kind {
            group: group.clone(),
            version: s(&version["name"]),
            plural: plural.clone(),
            singular: singular.clone(),
            kind: kind.clone(),
            namespaced,
            short_names: list(&names["shortNames"]),
            categories: list(&names["categories"]),
            status: version["subresources"]["status"].is_object(),
            builtin: false,
            storage: format!("{group}/{plural}"),
            view: View::Native,
            table: TableKind::Printer(columns),
            fields: Vec::new(),
            behaviour: Behaviour::Plain,
        });
    }
    if kinds.is_empty() {
        return Err("spec.versions has no served version".into());
    }
    Ok(kinds)
}

/// The served kinds.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    kinds: Vec<Arc<Kind>>,
}

impl Registry {
    /// The built-ins only.
    pub fn new() -> Self {
        Registry {
            kinds: builtins().into_iter().map(Arc::new).collect(),
        }
    }

    /// The kind served at `group/version/plural`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Kind>> {
        self.kinds
            .iter()
            .find(|k| k.group == group && k.version == version && k.plural == plural)
            .cloned()
    }

    /// The first kind stored under `storage` (its canonical view).
    pub fn by_storage(&self, storage: &str) -> Option<Arc<Kind>> {
        self.kinds.iter().find(|k| k.storage == storage).cloned()
    }

    /// The kind of an owner reference or an object's `apiVersion` + `kind`.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<Kind>> {
        self.kinds
            .iter()
            .find(|k| k.api_version() == api_version && k.kind == kind)
            .cloned()
    }

    /// Every served kind.
    pub fn all(&self) -> &[Arc<Kind>] {
        &self.kinds
    }

    /// Replaces the kinds stored under `storage` (a CRD created, changed or deleted).
    pub fn set_custom(&mut self, storage: &str, kinds: Vec<Kind>) {
        self.kinds.retain(|k| k.builtin || k.storage != storage);
        self.kinds.extend(kinds.into_iter().map(Arc::new));
    }

    /// Group versions served, in discovery order: `(group, [versions])`, core excluded.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for k in &self.kinds {
            if k.group.is_empty() {
                continue;
            }
            match out.iter_mut().find(|(g, _)| *g == k.group) {
                Some((_, vs)) if !vs.contains(&k.version) => vs.push(k.version.clone()),
                Some(_) => {}
                None => out.push((k.group.clone(), vec![k.version.clone()])),
            }
        }
        out
    }
}
