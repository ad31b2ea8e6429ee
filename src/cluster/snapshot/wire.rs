//! Nodes and pods read from a snapshot's text straight into the planner's model.
//!
//! Only the fields planning reads are deserialized, each with the type the API gives it (a
//! label value must be a string, a timestamp RFC 3339); everything else is skipped without
//! allocating. A key named twice is refused at any depth. Live DaemonSets, few and compared
//! field by field with git's, are kept whole as JSON values and converted by the caller.
//!
//! Where the reading of one object fails, [`take_failure`] says which object and which field:
//! the deserializer's error alone knows only a line and a column.

use crate::manifest::strict::{Key, SeenKeys, Skip, StrictValue, duplicate};
use crate::model::{
    KubeVersion, NODE_NAME_FIELD, Node, OwnerRef, Pod, PodPhase, ReadyCondition, Taint,
    TaintEffect, Timestamp,
};
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use smallvec::SmallVec;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;

/// Where an object sits inside a document: its index in each enclosing list's `items`.
pub(super) type Position = SmallVec<[u32; 2]>;

/// `items[3]` or `items[0].items[2]`; empty for a document's top-level object.
pub(super) fn render(at: &[u32]) -> String {
    let mut out = String::new();
    for (n, i) in at.iter().enumerate() {
        if n > 0 {
            out.push('.');
        }
        out.push_str(&format!("items[{i}]"));
    }
    out
}

/// One object of a document, read.
pub(super) enum Item {
    /// A `v1` Node, with its first taint whose effect the API does not know (index, effect).
    Node {
        node: Node,
        namespace: String,
        bad_taint: Option<(usize, String)>,
        kubelet: Option<KubeVersion>,
        at: Position,
    },
    /// A `v1` Pod.
    Pod { pod: Pod, at: Position },
    /// Anything else: see [`Entry`].
    Entry(Entry),
}

/// One object of a document, in file order. Nodes and pods are kept apart, in
/// [`Document::nodes`] and [`Document::pods`], so that a large document's are moved into the
/// observed state, not copied.
pub(super) enum Entry {
    /// The next of [`Document::nodes`].
    Node {
        namespace: String,
        bad_taint: Option<Box<(usize, String)>>,
        at: Position,
    },
    /// The next of [`Document::pods`].
    Pod { at: Position },
    /// An `apps/v1` DaemonSet, whole.
    DaemonSet { value: Value, at: Position },
    /// An object of another kind, as `apiVersion/kind`.
    Other { key: String },
    /// A Node or Pod whose fields could not be read (it came with `kind` after them).
    Invalid(Box<Invalid>),
    /// Not an object: `found` says what it is.
    NotAnObject { found: &'static str, at: String },
    /// The Kubernetes version `daemonsync snapshot` recorded on its `List`
    /// ([`KUBERNETES_VERSION_ANNOTATION`]), as written.
    Version(String),
}

/// The annotation of the `List` `daemonsync snapshot` writes that records the API server's
/// version.
pub const KUBERNETES_VERSION_ANNOTATION: &str = "daemonsync.io/kubernetes-version";

/// A Node or Pod whose fields could not be read.
pub(super) struct Invalid {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub field: String,
    pub message: String,
    pub at: Position,
}

/// The objects of one document, lists flattened, in file order.
#[derive(Default)]
pub(super) struct Document {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub entries: Vec<Entry>,
    /// The newest `status.nodeInfo.kubeletVersion` of the document's nodes.
    pub newest_kubelet: Option<KubeVersion>,
}

impl Document {
    fn push(&mut self, item: Item) {
        match item {
            Item::Node {
                node,
                namespace,
                bad_taint,
                kubelet,
                at,
            } => {
                self.newest_kubelet = self.newest_kubelet.max(kubelet);
                self.nodes.push(node);
                self.entries.push(Entry::Node {
                    namespace,
                    bad_taint: bad_taint.map(Box::new),
                    at,
                });
            }
            Item::Pod { pod, at } => {
                self.pods.push(pod);
                self.entries.push(Entry::Pod { at });
            }
            Item::Entry(entry) => self.entries.push(entry),
        }
    }

    fn len(&self) -> (usize, usize, usize) {
        (self.nodes.len(), self.pods.len(), self.entries.len())
    }

    fn truncate(&mut self, (nodes, pods, entries): (usize, usize, usize)) {
        self.nodes.truncate(nodes);
        self.pods.truncate(pods);
        self.entries.truncate(entries);
    }
}

impl<'de> Deserialize<'de> for Document {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut doc = Document::default();
        let mut at = Position::new();
        ObjectSeed {
            out: &mut doc,
            at: &mut at,
        }
        .deserialize(d)?;
        doc.nodes.shrink_to_fit();
        doc.pods.shrink_to_fit();
        Ok(doc)
    }
}

/// The object and field being read when the reading failed.
#[derive(Debug, Default)]
pub(super) struct Failure {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub at: String,
    /// The path from the document's root, when the second, path-tracking pass found it.
    pub path: Option<String>,
}

thread_local! {
    static FAILURE: RefCell<Option<Failure>> = const { RefCell::new(None) };
}

/// The failure recorded by the last reading on this thread, if any (and forgets it).
pub(super) fn take_failure() -> Option<Failure> {
    FAILURE.with(|f| f.borrow_mut().take())
}

/// Records the innermost object that failed: outer lists see the error after it.
fn record(kind: &str, meta: Option<&Meta>, at: &Position) {
    FAILURE.with(|f| {
        let mut f = f.borrow_mut();
        if f.is_none() {
            let non_empty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
            *f = Some(Failure {
                kind: kind.to_string(),
                namespace: meta.and_then(|m| non_empty(&m.namespace)),
                name: meta.and_then(|m| non_empty(&m.name)),
                at: render(at),
                path: None,
            });
        }
    });
}

/// A document read with `serde_path_to_error`, recording the path of the failing field: the
/// second pass, run only after a failure (tracking every key would cost the first one an
/// allocation per key).
pub(super) struct Tracked(pub(super) Document);

impl<'de> Deserialize<'de> for Tracked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut track = serde_path_to_error::Track::new();
        let read = Document::deserialize(serde_path_to_error::Deserializer::new(d, &mut track));
        read.map(Tracked).inspect_err(|_| {
            let path = track.path().to_string();
            FAILURE.with(|f| {
                if let Some(f) = f.borrow_mut().as_mut() {
                    f.path = Some(path);
                }
            });
        })
    }
}

fn describe_unexpected(what: serde::de::Unexpected<'_>) -> &'static str {
    use serde::de::Unexpected as U;
    match what {
        U::Bool(_) => "a boolean",
        U::Unsigned(_) | U::Signed(_) | U::Float(_) => "a number",
        U::Seq => "a sequence",
        U::Map => "a mapping",
        U::Unit | U::Option => "null",
        _ => "a string",
    }
}

/// Reads one object (or list, or anything found where an object should be) into `out`.
struct ObjectSeed<'a> {
    out: &'a mut Document,
    at: &'a mut Position,
}

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl ObjectSeed<'_> {
    fn not_an_object(self, what: serde::de::Unexpected<'_>) {
        self.out.push(Item::Entry(Entry::NotAnObject {
            found: describe_unexpected(what),
            at: render(self.at),
        }));
    }
}

/// How the rest of an object is read, once `apiVersion` and `kind` are known.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Not known yet: keys are kept as JSON values until they are.
    Unknown,
    Node,
    Pod,
    /// Kept whole (`apps/v1` DaemonSets).
    Whole,
    List,
    Skip,
}

fn is_list_kind(kind: &str) -> bool {
    kind.ends_with("List")
}

fn mode(api_version: Option<&str>, kind: Option<&str>) -> Mode {
    match (api_version, kind) {
        (_, Some(k)) if is_list_kind(k) => Mode::List,
        (Some("v1"), Some("Node")) => Mode::Node,
        (Some("v1"), Some("Pod")) => Mode::Pod,
        (Some("apps/v1"), Some("DaemonSet")) => Mode::Whole,
        (Some(_), Some(_)) => Mode::Skip,
        _ => Mode::Unknown,
    }
}

/// Whatever `items` held.
enum Items {
    Absent,
    /// A sequence (or null): its objects are already in `out`.
    Read,
    NotASequence(&'static str),
}

impl<'de> Visitor<'de> for ObjectSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.not_an_object(serde::de::Unexpected::Bool(v));
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.not_an_object(serde::de::Unexpected::Signed(v));
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.not_an_object(serde::de::Unexpected::Unsigned(v));
        Ok(())
    }
    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.not_an_object(serde::de::Unexpected::Float(v));
        Ok(())
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.not_an_object(serde::de::Unexpected::Str(v));
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        self.not_an_object(serde::de::Unexpected::Seq);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ObjectSeed { out, at } = self;
        let first = out.len();
        let mut api_version: Option<String> = None;
        let mut kind: Option<String> = None;
        let mut items = Items::Absent;
        let mut meta: Option<Meta> = None;
        let mut node = (None::<NodeSpec>, None::<NodeStatus>);
        let mut pod = (None::<PodSpec>, None::<PodStatus>);
        // Fields kept as JSON values: all of a DaemonSet, and all of an object whose type came
        // after its other fields.
        let mut kept = Map::new();
        let mut seen = SeenKeys::default();
        while let Some(Key(key)) = map.next_key()? {
            let mode = match mode(api_version.as_deref(), kind.as_deref()) {
                Mode::Node | Mode::Pod if !kept.is_empty() => Mode::Unknown,
                mode => mode,
            };
            match &*key {
                "apiVersion" | "kind" => {
                    // Not a string: taken as absent.
                    let StrictValue(v) = map.next_value()?;
                    let s = v.as_str().map(str::to_string);
                    if key == "kind" {
                        kind = s;
                    } else {
                        api_version = s;
                    }
                }
                // Lists come with `items` before `kind` (kubectl sorts keys): read them as
                // list items until `kind` says otherwise.
                "items" if matches!(mode, Mode::List | Mode::Unknown) => {
                    items = map.next_value_seed(ItemsSeed {
                        out: &mut *out,
                        at: &mut *at,
                    })?;
                }
                "metadata" if mode == Mode::List => {
                    let list: Option<ListMeta> = map.next_value()?;
                    if let Some(v) = list
                        .and_then(|m| m.annotations)
                        .and_then(|mut a| a.0.remove(KUBERNETES_VERSION_ANNOTATION))
                    {
                        out.push(Item::Entry(Entry::Version(v)));
                    }
                }
                "metadata" if matches!(mode, Mode::Node | Mode::Pod) => {
                    meta = map
                        .next_value::<Option<Meta>>()
                        .inspect_err(|_| record(kind.as_deref().unwrap_or_default(), None, at))?;
                }
                "spec" | "status" if matches!(mode, Mode::Node | Mode::Pod) => {
                    let kind = kind.as_deref().unwrap_or_default();
                    let read = match (mode, &*key) {
                        (Mode::Node, "spec") => map.next_value().map(|v| node.0 = v),
                        (Mode::Node, _) => map.next_value().map(|v| node.1 = v),
                        (_, "spec") => map.next_value().map(|v| pod.0 = v),
                        _ => map.next_value().map(|v| pod.1 = v),
                    };
                    read.inspect_err(|_| record(kind, meta.as_ref(), at))?;
                }
                _ if matches!(mode, Mode::Whole | Mode::Unknown) => {
                    let StrictValue(v) = map.next_value()?;
                    kept.insert(key.to_string(), v);
                }
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
            seen.insert(key)?;
        }
        let is_list = match kind.as_deref() {
            Some("List") => true,
            Some(k) => is_list_kind(k) && !matches!(items, Items::Absent),
            None => false,
        };
        if is_list {
            // A `List` whose `metadata` came before its `kind`.
            if let Some(v) = kept
                .get("metadata")
                .and_then(|m| {
                    m.pointer(&format!(
                        "/annotations/{}",
                        KUBERNETES_VERSION_ANNOTATION.replace('/', "~1")
                    ))
                })
                .and_then(Value::as_str)
            {
                out.push(Item::Entry(Entry::Version(v.to_string())));
            }
            if let Items::NotASequence(found) = items {
                out.push(Item::Entry(Entry::NotAnObject {
                    found,
                    at: join(&render(at), "items"),
                }));
            }
            return Ok(());
        }
        // Not a list after all: what its `items` held is not objects of the snapshot.
        out.truncate(first);
        let Some(kind) = kind else {
            out.push(Item::Entry(Entry::NotAnObject {
                found: "a mapping without `kind`",
                at: render(at),
            }));
            return Ok(());
        };
        let api_version = api_version.unwrap_or_default();
        let mode = mode(Some(&api_version), Some(&kind));
        if mode == Mode::Whole {
            kept.insert("apiVersion".into(), Value::String(api_version.clone()));
            kept.insert("kind".into(), Value::String(kind.clone()));
        }
        let item = match mode {
            Mode::Node | Mode::Pod if !kept.is_empty() => from_kept(kept, &kind, at),
            Mode::Node => {
                let meta = meta.unwrap_or_default();
                let namespace = meta.namespace.clone().unwrap_or_default();
                let (node, bad_taint, kubelet) = node_from(meta, node.0, node.1);
                Item::Node {
                    node,
                    namespace,
                    bad_taint,
                    kubelet,
                    at: at.clone(),
                }
            }
            Mode::Pod => Item::Pod {
                pod: pod_from(meta.unwrap_or_default(), pod.0, pod.1),
                at: at.clone(),
            },
            Mode::Whole => Item::Entry(Entry::DaemonSet {
                value: Value::Object(kept),
                at: at.clone(),
            }),
            _ => Item::Entry(Entry::Other {
                key: if api_version.is_empty() {
                    kind
                } else {
                    format!("{api_version}/{kind}")
                },
            }),
        };
        out.push(item);
        Ok(())
    }
}

fn join(position: &str, part: &str) -> String {
    if position.is_empty() {
        part.to_string()
    } else {
        format!("{position}.{part}")
    }
}

/// A Node or Pod whose `apiVersion` or `kind` came after its other fields: read from the
/// values kept meanwhile (the rare case; kubectl writes them first).
fn from_kept(kept: Map<String, Value>, kind: &str, at: &Position) -> Item {
    #[derive(Deserialize)]
    struct Parts<S, T> {
        metadata: Option<Meta>,
        spec: Option<S>,
        status: Option<T>,
    }
    let namespace = kept
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let name = kept
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let value = Value::Object(kept);
    let invalid = |e: serde_path_to_error::Error<serde_json::Error>| {
        Item::Entry(Entry::Invalid(Box::new(Invalid {
            kind: kind.to_string(),
            namespace: Some(namespace.clone()).filter(|s| !s.is_empty()),
            name: name.clone(),
            field: e.path().to_string(),
            message: e.into_inner().to_string(),
            at: at.clone(),
        })))
    };
    if kind == "Node" {
        match serde_path_to_error::deserialize::<_, Parts<NodeSpec, NodeStatus>>(&value) {
            Ok(p) => {
                let (node, bad_taint, kubelet) =
                    node_from(p.metadata.unwrap_or_default(), p.spec, p.status);
                Item::Node {
                    node,
                    namespace: namespace.clone(),
                    bad_taint,
                    kubelet,
                    at: at.clone(),
                }
            }
            Err(e) => invalid(e),
        }
    } else {
        match serde_path_to_error::deserialize::<_, Parts<PodSpec, PodStatus>>(&value) {
            Ok(p) => Item::Pod {
                pod: pod_from(p.metadata.unwrap_or_default(), p.spec, p.status),
                at: at.clone(),
            },
            Err(e) => invalid(e),
        }
    }
}

/// Reads a list's `items` into `out`, each with its position.
struct ItemsSeed<'a> {
    out: &'a mut Document,
    at: &'a mut Position,
}

impl<'de> DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = Items;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Items, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'_> {
    type Value = Items;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence of objects")
    }
    fn visit_unit<E>(self) -> Result<Items, E> {
        Ok(Items::Read)
    }
    fn visit_none<E>(self) -> Result<Items, E> {
        Ok(Items::Read)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Items, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Items, E> {
        Ok(Items::NotASequence("a boolean"))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Items, E> {
        Ok(Items::NotASequence("a number"))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Items, E> {
        Ok(Items::NotASequence("a number"))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Items, E> {
        Ok(Items::NotASequence("a number"))
    }
    fn visit_str<E>(self, _: &str) -> Result<Items, E> {
        Ok(Items::NotASequence("a string"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Items, A::Error> {
        let mut seen = SeenKeys::default();
        while let Some(Key(key)) = map.next_key()? {
            map.next_value::<Skip>()?;
            seen.insert(key)?;
        }
        Ok(Items::NotASequence("a mapping"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Items, A::Error> {
        let ItemsSeed { out, at } = self;
        let mut i: u32 = 0;
        loop {
            at.push(i);
            let more = seq.next_element_seed(ObjectSeed {
                out: &mut *out,
                at: &mut *at,
            });
            at.pop();
            if more?.is_none() {
                return Ok(Items::Read);
            }
            i = i.saturating_add(1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The fields planning reads, as the API types them.

/// Declares a mapping read into `Option`s of its listed fields (absent or `null` is `None`, as
/// k8s-openapi reads them), every other key skipped, every key at most once.
macro_rules! wire {
    ($(#[$doc:meta])* struct $name:ident { $($field:ident: $ty:ty = $key:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Default)]
        pub(super) struct $name {
            $(pub(super) $field: Option<$ty>,)+
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!("struct ", stringify!($name)))
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        let mut out = $name::default();
                        let mut seen = SeenKeys::default();
                        while let Some(Key(key)) = map.next_key()? {
                            match &*key {
                                $($key => out.$field = map.next_value()?,)+
                                _ => {
                                    map.next_value::<Skip>()?;
                                }
                            }
                            seen.insert(key)?;
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

/// Declares a string read as whether it equals one value, without keeping it.
macro_rules! string_is {
    ($(#[$doc:meta])* $name:ident = $value:expr) => {
        $(#[$doc])*
        pub(super) struct $name(pub(super) bool);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a string")
                    }
                    fn visit_str<E: Error>(self, v: &str) -> Result<$name, E> {
                        Ok($name(v == $value))
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}

string_is!(
    /// A condition `type`: is it `Ready`?
    IsReady = "Ready"
);
string_is!(
    /// A condition `status`: is it `True`?
    IsTrue = "True"
);
string_is!(
    /// A node selector requirement's `key`: is it the node name field?
    IsNodeNameField = NODE_NAME_FIELD
);
string_is!(
    /// A node selector requirement's `operator`: is it `In`?
    IsIn = "In"
);

/// A pod `phase`, parsed without keeping the string.
pub(super) struct Phase(PodPhase);

impl<'de> Deserialize<'de> for Phase {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Phase;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Phase, E> {
                Ok(Phase(PodPhase::parse(Some(v))))
            }
        }
        d.deserialize_str(V)
    }
}

/// A resource list (`{cpu: 500m, memory: 1Gi}`), its quantities as written: strings or
/// numbers. A key named twice is refused.
#[derive(Default)]
pub(super) struct ResourceList(BTreeMap<String, String>);

impl<'de> Deserialize<'de> for ResourceList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// A quantity: a string or a number.
        struct Amount(String);
        impl<'de> Deserialize<'de> for Amount {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = Amount;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a quantity")
                    }
                    fn visit_str<E: Error>(self, v: &str) -> Result<Amount, E> {
                        Ok(Amount(v.to_string()))
                    }
                    fn visit_u64<E: Error>(self, v: u64) -> Result<Amount, E> {
                        Ok(Amount(v.to_string()))
                    }
                    fn visit_i64<E: Error>(self, v: i64) -> Result<Amount, E> {
                        Ok(Amount(v.to_string()))
                    }
                    fn visit_f64<E: Error>(self, v: f64) -> Result<Amount, E> {
                        Ok(Amount(v.to_string()))
                    }
                }
                d.deserialize_any(V)
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ResourceList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of quantities")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResourceList, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    let Amount(value) = map.next_value()?;
                    if out.contains_key(&key) {
                        return Err(duplicate(&key));
                    }
                    out.insert(key, value);
                }
                Ok(ResourceList(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl ResourceList {
    /// The list as the API types hold it.
    fn into_k8s(self) -> BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity> {
        self.0
            .into_iter()
            .map(|(k, v)| {
                (
                    k,
                    k8s_openapi::apimachinery::pkg::api::resource::Quantity(v),
                )
            })
            .collect()
    }
}

/// `metadata.labels`: a key named twice is refused (a map would keep the last).
#[derive(Default)]
pub(super) struct Labels(crate::model::Labels);

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Labels;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Labels, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value: String = map.next_value()?;
                    if out.contains_key(&key) {
                        return Err(duplicate(&key));
                    }
                    out.insert(key, value);
                }
                Ok(Labels(out))
            }
        }
        d.deserialize_map(V)
    }
}

wire! {
    /// `metadata`.
    struct Meta {
        name: String = "name",
        namespace: String = "namespace",
        labels: Labels = "labels",
        owner_references: Vec<OwnerRefWire> = "ownerReferences",
        creation_timestamp: Timestamp = "creationTimestamp",
        deletion_timestamp: Timestamp = "deletionTimestamp",
        annotations: AnnotationsWire = "annotations",
    }
}

wire! {
    /// The annotations a snapshot reads: what `daemonsync snapshot` recorded a node's pods
    /// request (every pod bound to it, daemon pods or not), a pod's requests, and the digests of
    /// its versioned config (`daemonsync.io/config`: never a value).
    struct AnnotationsWire {
        requested: String = "daemonsync.io/requested",
        requests: String = "daemonsync.io/requests",
        config: String = "daemonsync.io/config",
    }
}

wire! {
    /// One of `metadata.ownerReferences`.
    struct OwnerRefWire {
        api_version: String = "apiVersion",
        kind: String = "kind",
        name: String = "name",
        uid: String = "uid",
        controller: bool = "controller",
    }
}

wire! {
    /// A Node's `spec`.
    struct NodeSpec {
        taints: Vec<TaintWire> = "taints",
        unschedulable: bool = "unschedulable",
    }
}

wire! {
    /// One of a Node's `spec.taints`.
    struct TaintWire {
        key: String = "key",
        value: String = "value",
        effect: String = "effect",
    }
}

wire! {
    /// A Node's `status`.
    struct NodeStatus {
        conditions: Vec<Condition> = "conditions",
        allocatable: ResourceList = "allocatable",
        node_info: NodeInfo = "nodeInfo",
    }
}

wire! {
    /// A Node's `status.nodeInfo`.
    struct NodeInfo {
        kubelet_version: String = "kubeletVersion",
    }
}

wire! {
    /// A `List`'s `metadata`.
    struct ListMeta {
        annotations: Labels = "annotations",
    }
}

wire! {
    /// A Node or Pod condition.
    struct Condition {
        type_: IsReady = "type",
        status: IsTrue = "status",
        last_transition_time: Timestamp = "lastTransitionTime",
    }
}

wire! {
    /// A Pod's `spec`.
    struct PodSpec {
        node_name: String = "nodeName",
        affinity: Affinity = "affinity",
        containers: Vec<ContainerWire> = "containers",
        init_containers: Vec<ContainerWire> = "initContainers",
        overhead: ResourceList = "overhead",
    }
}

wire! {
    /// What a container requests.
    struct ContainerWire {
        resources: ResourcesWire = "resources",
        restart_policy: String = "restartPolicy",
    }
}

wire! {
    /// A container's `resources`.
    struct ResourcesWire {
        requests: ResourceList = "requests",
        limits: ResourceList = "limits",
    }
}

wire! {
    /// `spec.affinity`.
    struct Affinity {
        node_affinity: NodeAffinity = "nodeAffinity",
    }
}

wire! {
    /// `spec.affinity.nodeAffinity`.
    struct NodeAffinity {
        required: NodeSelector = "requiredDuringSchedulingIgnoredDuringExecution",
    }
}

wire! {
    /// A required node selector.
    struct NodeSelector {
        terms: Vec<NodeSelectorTerm> = "nodeSelectorTerms",
    }
}

wire! {
    /// One node selector term (its `matchExpressions` do not name a node).
    struct NodeSelectorTerm {
        match_fields: Vec<Requirement> = "matchFields",
    }
}

wire! {
    /// One `matchFields` requirement.
    struct Requirement {
        key: IsNodeNameField = "key",
        operator: IsIn = "operator",
        values: Vec<String> = "values",
    }
}

wire! {
    /// A Pod's `status`.
    struct PodStatus {
        phase: Phase = "phase",
        conditions: Vec<Condition> = "conditions",
        init_container_statuses: Vec<ContainerStatus> = "initContainerStatuses",
        container_statuses: Vec<ContainerStatus> = "containerStatuses",
    }
}

wire! {
    /// One container status.
    struct ContainerStatus {
        state: ContainerState = "state",
    }
}

wire! {
    /// A container's `state`.
    struct ContainerState {
        waiting: Reason = "waiting",
        terminated: Reason = "terminated",
    }
}

wire! {
    /// `state.waiting` or `state.terminated`.
    struct Reason {
        reason: String = "reason",
    }
}

/// The planner's node, as [`Node::from_k8s`] makes it, with the first taint whose effect the
/// API does not know.
fn node_from(
    meta: Meta,
    spec: Option<NodeSpec>,
    status: Option<NodeStatus>,
) -> (Node, Option<(usize, String)>, Option<KubeVersion>) {
    let spec = spec.unwrap_or_default();
    let mut bad_taint = None;
    let mut taints = Vec::new();
    for (i, t) in spec.taints.unwrap_or_default().into_iter().enumerate() {
        let effect = t.effect.unwrap_or_default();
        match TaintEffect::parse(&effect) {
            Some(effect) => taints.push(Taint {
                key: t.key.unwrap_or_default(),
                value: t.value.unwrap_or_default(),
                effect,
            }),
            None => {
                if bad_taint.is_none() {
                    bad_taint = Some((i, effect));
                }
            }
        }
    }
    let status = status.unwrap_or_default();
    let allocatable = status
        .allocatable
        .map(|a| Box::new(crate::model::resources::from_list(&a.into_k8s())));
    let requested = meta
        .annotations
        .as_ref()
        .and_then(|a| a.requested.as_deref())
        .map(|text| Box::new(crate::model::resources::parse_requested(text)));
    let kubelet = status
        .node_info
        .and_then(|i| i.kubelet_version)
        .and_then(|v| KubeVersion::parse_reported(&v));
    let ready = status
        .conditions
        .and_then(|cs| {
            cs.into_iter()
                .find(|c| c.type_.as_ref().is_some_and(|t| t.0))
        })
        .map(|c| c.status.is_some_and(|s| s.0));
    let node = Node {
        name: meta.name.unwrap_or_default(),
        labels: meta.labels.unwrap_or_default().0,
        taints,
        ready,
        unschedulable: spec.unschedulable.unwrap_or(false),
        // A snapshot only plans: which images a node has is not read.
        images: Vec::new(),
        allocatable,
        // From the annotation `daemonsync snapshot` writes; else the pods of the file bound
        // to it are added up once all are read.
        requested,
    };
    (node, bad_taint, kubelet)
}

/// The planner's pod, as [`Pod::from_k8s`] makes it.
fn pod_from(meta: Meta, spec: Option<PodSpec>, status: Option<PodStatus>) -> Pod {
    let controller = meta
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .find(|r| r.controller == Some(true))
        .map(|r| {
            crate::model::shared_owner(OwnerRef {
                api_version: r.api_version.unwrap_or_default(),
                kind: r.kind.unwrap_or_default(),
                name: r.name.unwrap_or_default(),
                uid: r.uid.unwrap_or_default(),
            })
        });
    let spec = spec.unwrap_or_default();
    let node_name = spec
        .node_name
        .filter(|n| !n.is_empty())
        .map(|n| crate::model::shared_name(&n));
    let status = status.unwrap_or_default();
    let ready = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_.as_ref().is_some_and(|t| t.0))
        .map(|c| ReadyCondition {
            status: c.status.is_some_and(|s| s.0),
            last_transition: c.last_transition_time,
        });
    let waiting_reason = status
        .init_container_statuses
        .into_iter()
        .flatten()
        .chain(status.container_statuses.into_iter().flatten())
        .find_map(|cs| {
            let st = cs.state?;
            st.waiting
                .and_then(|w| w.reason)
                .or_else(|| st.terminated.and_then(|t| t.reason))
        });
    let recorded = meta
        .annotations
        .as_ref()
        .and_then(|a| a.requests.as_deref())
        .map(|text| {
            crate::model::resources::shared(crate::model::resources::parse_requested(text))
        });
    let requests =
        recorded.or_else(|| requests_of(spec.containers, spec.init_containers, spec.overhead));
    let target_node = node_name
        .clone()
        .or_else(|| target_from_affinity(spec.affinity).map(|n| crate::model::shared_name(&n)));
    Pod {
        namespace: crate::model::shared_name(&meta.namespace.unwrap_or_default()),
        name: meta.name.unwrap_or_default(),
        labels: crate::model::shared_labels(meta.labels.map(|l| l.0).as_ref()),
        controller,
        target_node,
        node_name,
        phase: status.phase.map_or(PodPhase::Pending, |p| p.0),
        creation_timestamp: meta.creation_timestamp,
        deletion_timestamp: meta.deletion_timestamp,
        ready,
        waiting_reason,
        // A snapshot only plans: what halts a rollout early is not read.
        signals: None,
        requests,
        // A snapshot only plans: what an in-place write needs is not read.
        detail: None,
        config: meta.annotations.and_then(|a| a.config),
    }
}

/// Upstream `PodRequests` of the containers read.
fn requests_of(
    containers: Option<Vec<ContainerWire>>,
    init_containers: Option<Vec<ContainerWire>>,
    overhead: Option<ResourceList>,
) -> Option<std::sync::Arc<crate::model::resources::Resources>> {
    use k8s_openapi::api::core::v1 as k8s;
    let container = |c: ContainerWire| {
        let r = c.resources.unwrap_or_default();
        k8s::Container {
            restart_policy: c.restart_policy,
            resources: Some(k8s::ResourceRequirements {
                requests: r.requests.map(ResourceList::into_k8s),
                limits: r.limits.map(ResourceList::into_k8s),
                ..Default::default()
            }),
            ..Default::default()
        }
    };
    // A pod has a container; one without (a pruned snapshot's) says nothing of them.
    let containers = containers.filter(|c| !c.is_empty())?;
    let spec = k8s::PodSpec {
        containers: containers.into_iter().map(container).collect(),
        init_containers: init_containers.map(|cs| cs.into_iter().map(container).collect()),
        overhead: overhead.map(ResourceList::into_k8s),
        ..Default::default()
    };
    Some(crate::model::resources::shared(
        crate::model::resources::pod_requests(&spec),
    ))
}

/// [`crate::model::target_node_from_affinity`] on the fields read.
fn target_from_affinity(affinity: Option<Affinity>) -> Option<String> {
    let terms = affinity?.node_affinity?.required?.terms.unwrap_or_default();
    for term in terms {
        for req in term.match_fields.into_iter().flatten() {
            let is_node_name = req.key.is_some_and(|k| k.0);
            let is_in = req.operator.is_some_and(|o| o.0);
            if is_node_name && is_in {
                let mut values = req.values.unwrap_or_default();
                return match values.len() {
                    1 => values.pop(),
                    _ => None,
                };
            }
        }
    }
    None
}
