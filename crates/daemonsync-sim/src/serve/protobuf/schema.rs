//! The messages decoded, one table each: field numbers from the Kubernetes `generated.proto`
//! files (core/v1, policy/v1, meta/v1, runtime, intstr, resource), JSON names and Go shapes from
//! the matching `types.go`, so the JSON comes out as kubectl would have sent it.
//!
//! No message refers back to itself or an ancestor, so decoding recurses at most as deep as
//! these tables nest (see `schemas_are_shallow` in the tests).

/// A message: its proto name (for error messages) and the fields read from it. Fields not
/// listed are skipped.
#[derive(Debug)]
pub(super) struct Message {
    /// The proto message name.
    pub name: &'static str,
    /// The fields read.
    pub fields: &'static [Field],
}

/// One field of a message.
#[derive(Debug, Clone, Copy)]
pub(super) struct Field {
    /// The field number on the wire.
    pub number: u32,
    /// The JSON name.
    pub json: &'static str,
    /// The value type (for maps: the value's type; keys are always strings).
    pub ty: Ty,
    /// How the Go field is declared, which decides when the JSON omits it.
    pub shape: Shape,
}

/// A value type.
#[derive(Debug, Clone, Copy)]
pub(super) enum Ty {
    /// Sent as one wire value (a varint or length-delimited bytes).
    Scalar(Scalar),
    /// Sent as an embedded message.
    Nested(Nested),
}

/// Types sent as one wire value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scalar {
    /// `string`.
    String,
    /// `bytes`, base64 in JSON.
    Bytes,
    /// `int64`, a JSON number.
    Int64,
    /// `int32`, a JSON number.
    Int32,
    /// `bool`.
    Bool,
}

impl Scalar {
    /// What a field of this type holds, for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Scalar::String => "a string",
            Scalar::Bytes => "bytes",
            Scalar::Int64 | Scalar::Int32 => "an integer",
            Scalar::Bool => "a boolean",
        }
    }

    /// Sent as a varint, so a repeated field of it may arrive packed.
    pub fn is_varint(self) -> bool {
        matches!(self, Scalar::Int64 | Scalar::Int32 | Scalar::Bool)
    }
}

/// Types sent as an embedded message. A singular one that arrives twice is merged, as
/// protobuf merges repeated embedded messages.
#[derive(Debug, Clone, Copy)]
pub(super) enum Nested {
    /// `meta/v1.Time`: RFC 3339 in JSON, `null` when unset.
    Time,
    /// `resource.Quantity`: its string in JSON.
    Quantity,
    /// `intstr.IntOrString`: a JSON number or string.
    IntOrString,
    /// A message of its own, a JSON object.
    Message(&'static Message),
}

/// How a field is declared in Go. encoding/json decides from this alone whether a field is
/// written, and the protobuf encoder writes every non-pointer field even when empty, so the
/// wire cannot tell an empty field from an unset one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// A plain value. With `omitempty`, an empty string, zero or false is left out; structs
    /// (messages, Time, Quantity, IntOrString) are always written, as Go ignores `omitempty`
    /// on them.
    Value {
        /// The JSON tag says `omitempty`.
        omitempty: bool,
    },
    /// A pointer: written exactly when it is on the wire.
    Pointer,
    /// A slice with `omitempty`: left out when empty.
    List,
    /// A `map[string]T` with `omitempty`: left out when empty.
    Map,
}

impl Field {
    const fn new(number: u32, json: &'static str, ty: Ty, shape: Shape) -> Field {
        Field {
            number,
            json,
            ty,
            shape,
        }
    }
}

const fn field(number: u32, json: &'static str, ty: Ty) -> Field {
    Field::new(number, json, ty, Shape::Value { omitempty: true })
}

const fn always(number: u32, json: &'static str, ty: Ty) -> Field {
    Field::new(number, json, ty, Shape::Value { omitempty: false })
}

const fn pointer(number: u32, json: &'static str, ty: Ty) -> Field {
    Field::new(number, json, ty, Shape::Pointer)
}

const fn list(number: u32, json: &'static str, ty: Ty) -> Field {
    Field::new(number, json, ty, Shape::List)
}

const fn map(number: u32, json: &'static str, ty: Ty) -> Field {
    Field::new(number, json, ty, Shape::Map)
}

const STRING: Ty = Ty::Scalar(Scalar::String);
const BYTES: Ty = Ty::Scalar(Scalar::Bytes);
const INT64: Ty = Ty::Scalar(Scalar::Int64);
const INT32: Ty = Ty::Scalar(Scalar::Int32);
const BOOL: Ty = Ty::Scalar(Scalar::Bool);
const TIME: Ty = Ty::Nested(Nested::Time);
const QUANTITY: Ty = Ty::Nested(Nested::Quantity);
const INT_OR_STRING: Ty = Ty::Nested(Nested::IntOrString);

/// The two fields of an entry of a `map<string, V>`, which protobuf sends as a repeated
/// message.
pub(super) const fn map_entry(value: Ty) -> [Field; 2] {
    [always(1, "<key>", STRING), always(2, "<value>", value)]
}

const fn msg(message: &'static Message) -> Ty {
    Ty::Nested(Nested::Message(message))
}

/// The kinds read from protobuf: `(apiVersion, kind, message)`.
pub(super) static KINDS: &[(&str, &str, &Message)] = &[
    ("v1", "Namespace", &NAMESPACE),
    ("v1", "ConfigMap", &CONFIG_MAP),
    ("v1", "Secret", &SECRET),
    ("v1", "ServiceAccount", &SERVICE_ACCOUNT),
    ("v1", "ResourceQuota", &RESOURCE_QUOTA),
    ("v1", "Service", &SERVICE),
    ("policy/v1", "PodDisruptionBudget", &POD_DISRUPTION_BUDGET),
];

/// The message of a kind, if it is read from protobuf.
pub(super) fn kind(api_version: &str, kind: &str) -> Option<&'static Message> {
    KINDS
        .iter()
        .find(|(v, k, _)| *v == api_version && *k == kind)
        .map(|(_, _, message)| *message)
}

// runtime: the envelope. `raw` (2) is read as bytes by the caller, not converted to JSON.

pub(super) static UNKNOWN: Message = Message {
    name: "runtime.Unknown",
    fields: &[
        pointer(1, "typeMeta", msg(&TYPE_META)),
        pointer(3, "contentEncoding", STRING),
        pointer(4, "contentType", STRING),
    ],
};

static TYPE_META: Message = Message {
    name: "runtime.TypeMeta",
    fields: &[field(1, "apiVersion", STRING), field(2, "kind", STRING)],
};

// Messages whose JSON is not an object: decoded as these, then reshaped.

pub(super) static TIME_MESSAGE: Message = Message {
    name: "meta.v1.Time",
    fields: &[always(1, "seconds", INT64), always(2, "nanos", INT32)],
};

pub(super) static INT_OR_STRING_MESSAGE: Message = Message {
    name: "intstr.IntOrString",
    fields: &[
        always(1, "type", INT64),
        always(2, "intVal", INT32),
        always(3, "strVal", STRING),
    ],
};

pub(super) static QUANTITY_MESSAGE: Message = Message {
    name: "resource.Quantity",
    // Absent and empty differ: absent is zero ("0"), empty is not a quantity.
    fields: &[pointer(1, "string", STRING)],
};

// meta/v1

static OBJECT_META: Message = Message {
    name: "meta.v1.ObjectMeta",
    // managedFields (17) is skipped: clients do not send it on create, and the server
    // keeps its own.
    fields: &[
        field(1, "name", STRING),
        field(2, "generateName", STRING),
        field(3, "namespace", STRING),
        field(4, "selfLink", STRING),
        field(5, "uid", STRING),
        field(6, "resourceVersion", STRING),
        field(7, "generation", INT64),
        field(8, "creationTimestamp", TIME),
        pointer(9, "deletionTimestamp", TIME),
        pointer(10, "deletionGracePeriodSeconds", INT64),
        map(11, "labels", STRING),
        map(12, "annotations", STRING),
        list(13, "ownerReferences", msg(&OWNER_REFERENCE)),
        list(14, "finalizers", STRING),
    ],
};

static OWNER_REFERENCE: Message = Message {
    name: "meta.v1.OwnerReference",
    fields: &[
        always(5, "apiVersion", STRING),
        always(1, "kind", STRING),
        always(3, "name", STRING),
        always(4, "uid", STRING),
        pointer(6, "controller", BOOL),
        pointer(7, "blockOwnerDeletion", BOOL),
    ],
};

static LABEL_SELECTOR: Message = Message {
    name: "meta.v1.LabelSelector",
    fields: &[
        map(1, "matchLabels", STRING),
        list(2, "matchExpressions", msg(&LABEL_SELECTOR_REQUIREMENT)),
    ],
};

static LABEL_SELECTOR_REQUIREMENT: Message = Message {
    name: "meta.v1.LabelSelectorRequirement",
    fields: &[
        always(1, "key", STRING),
        always(2, "operator", STRING),
        list(3, "values", STRING),
    ],
};

static CONDITION: Message = Message {
    name: "meta.v1.Condition",
    fields: &[
        always(1, "type", STRING),
        always(2, "status", STRING),
        field(3, "observedGeneration", INT64),
        always(4, "lastTransitionTime", TIME),
        always(5, "reason", STRING),
        always(6, "message", STRING),
    ],
};

// core/v1: Namespace

static NAMESPACE: Message = Message {
    name: "core.v1.Namespace",
    fields: &[
        field(1, "metadata", msg(&OBJECT_META)),
        field(2, "spec", msg(&NAMESPACE_SPEC)),
        field(3, "status", msg(&NAMESPACE_STATUS)),
    ],
};

static NAMESPACE_SPEC: Message = Message {
    name: "core.v1.NamespaceSpec",
    fields: &[list(1, "finalizers", STRING)],
};

static NAMESPACE_STATUS: Message = Message {
    name: "core.v1.NamespaceStatus",
    fields: &[
        field(1, "phase", STRING),
        list(2, "conditions", msg(&NAMESPACE_CONDITION)),
    ],
};

static NAMESPACE_CONDITION: Message = Message {
    name: "core.v1.NamespaceCondition",
    fields: &[
        always(1, "type", STRING),
        always(2, "status", STRING),
        field(4, "lastTransitionTime", TIME),
        field(5, "reason", STRING),
        field(6, "message", STRING),
    ],
};

// core/v1: ConfigMap, Secret, ServiceAccount

static CONFIG_MAP: Message = Message {
    name: "core.v1.ConfigMap",
    fields: &[
        field(1, "metadata", msg(&OBJECT_META)),
        pointer(4, "immutable", BOOL),
        map(2, "data", STRING),
        map(3, "binaryData", BYTES),
    ],
};

static SECRET: Message = Message {
    name: "core.v1.Secret",
    fields: &[
        field(1, "metadata", msg(&OBJECT_META)),
        pointer(5, "immutable", BOOL),
        map(2, "data", BYTES),
        map(4, "stringData", STRING),
        field(3, "type", STRING),
    ],
};

static SERVICE_ACCOUNT: Message = Message {
    name: "core.v1.ServiceAccount",
    fields: &[
        field(1, "metadata", msg(&OBJECT_META)),
        list(2, "secrets", msg(&OBJECT_REFERENCE)),
        list(3, "imagePullSecrets", msg(&LOCAL_OBJECT_REFERENCE)),
        pointer(4, "automountServiceAccountToken", BOOL),
    ],
};

static OBJECT_REFERENCE: Message = Message {
    name: "core.v1.ObjectReference",
    fields: &[
        field(1, "kind", STRING),
        field(2, "namespace", STRING),
        field(3, "name", STRING),
        field(4, "uid", STRING),
        field(5, "apiVersion", STRING),
        field(6, "resourceVersion", STRING),
        field(7, "fieldPath", STRING),
    ],
};

static LOCAL_OBJECT_REFERENCE: Message = Message {
    name: "core.v1.LocalObjectReference",
    fields: &[field(1, "name", STRING)],
};

// core/v1: ResourceQuota

static RESOURCE_QUOTA: Message = Message {
    name: "core.v1.ResourceQuota",
    fields: &[
        field(1, "metadata", msg(&OBJECT_META)),
        field(2, "spec", msg(&RESOURCE_QUOTA_SPEC)),
        field(3, "status", msg(&RESOURCE_QUOTA_STATUS)),
    ],
};

static RESOURCE_QUOTA_SPEC: Message = Message {
    name: "core.v1.ResourceQuotaSpec",
    fields: &[
        map(1, "hard", QUANTITY),
        list(2, "scopes", STRING),
        pointer(3, "scopeSelector", msg(&SCOPE_SELECTOR)),
    ],
};

static RESOURCE_QUOTA_STATUS: Message = Message {
    name: "core.v1.ResourceQuotaStatus",
    fields: &[map(1, "hard", QUANTITY), map(2, "used", QUANTITY)],
};

static SCOPE_SELECTOR: Message = Message {
    name: "core.v1.ScopeSelector",
    fields: &[list(
        1,
        "matchExpressions",
        msg(&SCOPED_RESOURCE_SELECTOR_REQUIREMENT),
    )],
};

static SCOPED_RESOURCE_SELECTOR_REQUIREMENT: Message = Message {
    name: "core.v1.ScopedResourceSelectorRequirement",
    fields: &[
        always(1, "scopeName", STRING),
        always(2, "operator", STRING),
        list(3, "values", STRING),
    ],
};

// core/v1: Service

static SERVICE: Message = Message {
    name: "core.v1.Service",
    fields: &[
        field(1, "metadata", msg(&OBJECT_META)),
        field(2, "spec", msg(&SERVICE_SPEC)),
        field(3, "status", msg(&SERVICE_STATUS)),
    ],
};

static SERVICE_SPEC: Message = Message {
    name: "core.v1.ServiceSpec",
    fields: &[
        list(1, "ports", msg(&SERVICE_PORT)),
        map(2, "selector", STRING),
        field(3, "clusterIP", STRING),
        list(18, "clusterIPs", STRING),
        field(4, "type", STRING),
        list(5, "externalIPs", STRING),
        field(7, "sessionAffinity", STRING),
        field(8, "loadBalancerIP", STRING),
        list(9, "loadBalancerSourceRanges", STRING),
        field(10, "externalName", STRING),
        field(11, "externalTrafficPolicy", STRING),
        field(12, "healthCheckNodePort", INT32),
        field(13, "publishNotReadyAddresses", BOOL),
        pointer(14, "sessionAffinityConfig", msg(&SESSION_AFFINITY_CONFIG)),
        list(19, "ipFamilies", STRING),
        pointer(17, "ipFamilyPolicy", STRING),
        pointer(20, "allocateLoadBalancerNodePorts", BOOL),
        pointer(21, "loadBalancerClass", STRING),
        pointer(22, "internalTrafficPolicy", STRING),
        pointer(23, "trafficDistribution", STRING),
    ],
};

static SERVICE_PORT: Message = Message {
    name: "core.v1.ServicePort",
    fields: &[
        field(1, "name", STRING),
        field(2, "protocol", STRING),
        pointer(6, "appProtocol", STRING),
        always(3, "port", INT32),
        field(4, "targetPort", INT_OR_STRING),
        field(5, "nodePort", INT32),
    ],
};

static SESSION_AFFINITY_CONFIG: Message = Message {
    name: "core.v1.SessionAffinityConfig",
    fields: &[pointer(1, "clientIP", msg(&CLIENT_IP_CONFIG))],
};

static CLIENT_IP_CONFIG: Message = Message {
    name: "core.v1.ClientIPConfig",
    fields: &[pointer(1, "timeoutSeconds", INT32)],
};

static SERVICE_STATUS: Message = Message {
    name: "core.v1.ServiceStatus",
    fields: &[
        field(1, "loadBalancer", msg(&LOAD_BALANCER_STATUS)),
        list(2, "conditions", msg(&CONDITION)),
    ],
};

static LOAD_BALANCER_STATUS: Message = Message {
    name: "core.v1.LoadBalancerStatus",
    fields: &[list(1, "ingress", msg(&LOAD_BALANCER_INGRESS))],
};

static LOAD_BALANCER_INGRESS: Message = Message {
    name: "core.v1.LoadBalancerIngress",
    fields: &[
        field(1, "ip", STRING),
        field(2, "hostname", STRING),
        pointer(3, "ipMode", STRING),
        list(4, "ports", msg(&PORT_STATUS)),
    ],
};

static PORT_STATUS: Message = Message {
    name: "core.v1.PortStatus",
    fields: &[
        always(1, "port", INT32),
        always(2, "protocol", STRING),
        pointer(3, "error", STRING),
    ],
};

// policy/v1: PodDisruptionBudget

static POD_DISRUPTION_BUDGET: Message = Message {
    name: "policy.v1.PodDisruptionBudget",
    fields: &[
        field(1, "metadata", msg(&OBJECT_META)),
        field(2, "spec", msg(&POD_DISRUPTION_BUDGET_SPEC)),
        field(3, "status", msg(&POD_DISRUPTION_BUDGET_STATUS)),
    ],
};

static POD_DISRUPTION_BUDGET_SPEC: Message = Message {
    name: "policy.v1.PodDisruptionBudgetSpec",
    fields: &[
        pointer(1, "minAvailable", INT_OR_STRING),
        pointer(2, "selector", msg(&LABEL_SELECTOR)),
        pointer(3, "maxUnavailable", INT_OR_STRING),
        pointer(4, "unhealthyPodEvictionPolicy", STRING),
    ],
};

static POD_DISRUPTION_BUDGET_STATUS: Message = Message {
    name: "policy.v1.PodDisruptionBudgetStatus",
    fields: &[
        field(1, "observedGeneration", INT64),
        map(2, "disruptedPods", TIME),
        always(3, "disruptionsAllowed", INT32),
        always(4, "currentHealthy", INT32),
        always(5, "desiredHealthy", INT32),
        always(6, "expectedPods", INT32),
        list(7, "conditions", msg(&CONDITION)),
    ],
};
