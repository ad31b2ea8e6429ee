//! The decoder against hand-built bodies: the wire format's corners, Go's JSON shapes and
//! every way a body can be refused.

use super::message::{self, base64};
use super::schema::{self, Field, Message, Scalar, Shape, Ty};
use super::{DecodeError, MAGIC, decode};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Value, json};

// A small protobuf encoder, so each test shows the bytes it sends.

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

fn key(number: u32, wire_type: u8) -> Vec<u8> {
    varint((u64::from(number) << 3) | u64::from(wire_type))
}

fn int(number: u32, v: u64) -> Vec<u8> {
    [key(number, 0), varint(v)].concat()
}

fn len(number: u32, bytes: &[u8]) -> Vec<u8> {
    [key(number, 2), varint(bytes.len() as u64), bytes.to_vec()].concat()
}

fn text(number: u32, s: &str) -> Vec<u8> {
    len(number, s.as_bytes())
}

fn entry(number: u32, k: &str, v: &[u8]) -> Vec<u8> {
    len(number, &[text(1, k), len(2, v)].concat())
}

fn type_meta(api_version: &str, kind: &str) -> Vec<u8> {
    len(1, &[text(1, api_version), text(2, kind)].concat())
}

/// A body as kubectl frames it: typeMeta, raw, and empty contentEncoding and contentType.
fn body(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    [
        MAGIC.to_vec(),
        type_meta(api_version, kind),
        len(2, raw),
        text(3, ""),
        text(4, ""),
    ]
    .concat()
}

fn meta(name: &str, namespace: &str) -> Vec<u8> {
    len(1, &[text(1, name), text(3, namespace)].concat())
}

fn malformed(result: Result<Value, DecodeError>) -> (String, String) {
    match result {
        Err(DecodeError::Malformed { path, why, .. }) => (path, why),
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn a_config_map_reads_as_kubectl_json() {
    let raw = [
        meta("c", "demo"),
        entry(2, "a", b"b"),
        entry(3, "blob", &[0, 1, 2, 255]),
        int(4, 1),
    ]
    .concat();
    assert_eq!(
        decode(&body("v1", "ConfigMap", &raw)).unwrap(),
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "demo", "creationTimestamp": null},
            "data": {"a": "b"}, "binaryData": {"blob": "AAEC/w=="}, "immutable": true,
        })
    );
}

#[test]
fn every_object_meta_field_reads_under_its_json_name() {
    let owner = [
        text(1, "DaemonSet"),
        text(3, "agent"),
        text(4, "u-1"),
        text(5, "apps/v1"),
        int(6, 1),
        int(7, 0),
    ]
    .concat();
    let metadata = [
        text(1, "s"),
        text(2, "s-"),
        text(3, "demo"),
        text(5, "uid-1"),
        text(6, "42"),
        int(7, 3),
        len(8, &int(1, 1_700_000_000)),
        len(9, &[int(1, 1_700_000_030), int(2, 500)].concat()),
        int(10, 30),
        entry(11, "app", b"web"),
        entry(11, "tier", b"front"),
        entry(12, "note", b"x"),
        len(13, &owner),
        text(14, "example.com/a"),
        text(14, "example.com/b"),
        len(17, &text(1, "kubectl")),
    ]
    .concat();
    let object = decode(&body("v1", "Secret", &len(1, &metadata))).unwrap();
    assert_eq!(
        object["metadata"],
        json!({
            "name": "s", "generateName": "s-", "namespace": "demo", "uid": "uid-1",
            "resourceVersion": "42", "generation": 3,
            "creationTimestamp": "2023-11-14T22:13:20Z",
            "deletionTimestamp": "2023-11-14T22:13:50Z",
            "deletionGracePeriodSeconds": 30,
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"note": "x"},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u-1",
                "controller": true, "blockOwnerDeletion": false,
            }],
            "finalizers": ["example.com/a", "example.com/b"],
        })
    );
}

#[test]
fn secret_data_is_base64_and_string_data_and_type_are_kept() {
    let raw = [
        meta("s", "demo"),
        entry(2, "token", b"not-a-real-secret"),
        entry(4, "plain", b"text"),
        text(3, "Opaque"),
    ]
    .concat();
    let object = decode(&body("v1", "Secret", &raw)).unwrap();
    assert_eq!(object["data"], json!({"token": "bm90LWEtcmVhbC1zZWNyZXQ="}));
    assert_eq!(object["stringData"], json!({"plain": "text"}));
    assert_eq!(object["type"], "Opaque");
    assert!(
        object.get("immutable").is_none(),
        "absent pointer is omitted"
    );
}

#[test]
fn unknown_fields_of_every_wire_type_are_skipped() {
    let plain = [meta("c", "demo"), entry(2, "a", b"b")].concat();
    let noisy = [
        int(99, 7),
        [key(100, 1), 8u64.to_le_bytes().to_vec()].concat(),
        plain.clone(),
        [key(101, 5), 4u32.to_le_bytes().to_vec()].concat(),
        len(102, b"anything, even \xff"),
        len(1, &len(17, b"managedFields are skipped")),
    ]
    .concat();
    assert_eq!(
        decode(&body("v1", "ConfigMap", &noisy)).unwrap(),
        decode(&body("v1", "ConfigMap", &plain)).unwrap()
    );
}

/// No served kind has a repeated integer, so this reads a table of its own.
#[test]
fn packed_and_unpacked_repeated_integers_read_alike() {
    static NUMBERS: Message = Message {
        name: "test.Numbers",
        fields: &[Field {
            number: 1,
            json: "n",
            ty: Ty::Scalar(Scalar::Int64),
            shape: Shape::List,
        }],
    };
    let unpacked = [int(1, 1), int(1, 2), int(1, 300)].concat();
    let packed = len(1, &[varint(1), varint(2), varint(300)].concat());
    let mixed = [int(1, 1), len(1, &[varint(2), varint(300)].concat())].concat();
    for bytes in [unpacked, packed, mixed] {
        let object = message::decode(&bytes, &NUMBERS).unwrap();
        assert_eq!(Value::Object(object), json!({"n": [1, 2, 300]}));
    }
}

#[test]
fn empty_maps_and_lists_are_omitted_and_an_empty_entry_is_kept() {
    let raw = [meta("c", "demo"), len(1, &[])].concat();
    let object = decode(&body("v1", "ConfigMap", &raw)).unwrap();
    assert!(object.get("data").is_none());
    assert!(object.get("binaryData").is_none());
    let empty_entry = [meta("c", "demo"), len(2, &[])].concat();
    let object = decode(&body("v1", "ConfigMap", &empty_entry)).unwrap();
    assert_eq!(object["data"], json!({"": ""}));
}

#[test]
fn go_value_fields_are_written_even_when_absent() {
    let object = decode(&body("policy/v1", "PodDisruptionBudget", &[])).unwrap();
    assert_eq!(
        object,
        json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"creationTimestamp": null},
            "spec": {},
            "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                       "expectedPods": 0},
        })
    );
}

#[test]
fn a_singular_message_sent_twice_is_merged() {
    let raw = [len(1, &text(1, "c")), len(1, &text(3, "demo"))].concat();
    let object = decode(&body("v1", "ConfigMap", &raw)).unwrap();
    assert_eq!(object["metadata"]["name"], "c");
    assert_eq!(object["metadata"]["namespace"], "demo");
}

#[test]
fn the_last_of_a_repeated_scalar_wins() {
    let raw = len(1, &[text(1, "first"), text(1, "last")].concat());
    let object = decode(&body("v1", "ConfigMap", &raw)).unwrap();
    assert_eq!(object["metadata"]["name"], "last");
}

#[test]
fn int_or_string_reads_as_a_number_or_a_string() {
    let port = |target: Vec<u8>| {
        let spec = len(1, &[int(3, 80), len(4, &target)].concat());
        let object = decode(&body("v1", "Service", &len(2, &spec))).unwrap();
        object["spec"]["ports"][0]["targetPort"].clone()
    };
    assert_eq!(port([int(1, 0), int(2, 8080)].concat()), json!(8080));
    assert_eq!(port([int(1, 1), text(3, "http")].concat()), json!("http"));
    let bad = len(1, &[int(3, 80), len(4, &int(1, 7))].concat());
    let (path, why) = malformed(decode(&body("v1", "Service", &len(2, &bad))));
    assert_eq!(path, "spec.ports[0].targetPort");
    assert!(why.contains("type 7"), "{why}");
}

#[test]
fn negative_int32_sent_as_ten_bytes_reads_negative() {
    let spec = len(1, &[int(3, (-1i64) as u64)].concat());
    let object = decode(&body("v1", "Service", &len(2, &spec))).unwrap();
    assert_eq!(object["spec"]["ports"][0]["port"], -1);
}

#[test]
fn quantities_keep_their_string() {
    let quota = len(
        2,
        &[entry(1, "cpu", &text(1, "500m")), entry(1, "pods", &[])].concat(),
    );
    let object = decode(&body("v1", "ResourceQuota", &quota)).unwrap();
    assert_eq!(object["spec"]["hard"], json!({"cpu": "500m", "pods": "0"}));
    let empty = len(2, &entry(1, "cpu", &text(1, "")));
    let (path, why) = malformed(decode(&body("v1", "ResourceQuota", &empty)));
    assert_eq!(
        (path.as_str(), why.as_str()),
        ("spec.hard.<value>", "a quantity is empty")
    );
}

#[test]
fn times_are_rfc3339_in_utc_and_null_when_empty() {
    let created = |time: Vec<u8>| {
        let raw = len(1, &len(8, &time));
        decode(&body("v1", "Namespace", &raw)).map(|o| o["metadata"]["creationTimestamp"].clone())
    };
    assert_eq!(created(vec![]).unwrap(), Value::Null);
    assert_eq!(created(int(1, 0)).unwrap(), "1970-01-01T00:00:00Z");
    assert_eq!(
        created(int(1, (-62_135_596_800i64) as u64)).unwrap(),
        "0001-01-01T00:00:00Z"
    );
    assert_eq!(
        created(int(1, 253_402_300_799)).unwrap(),
        "9999-12-31T23:59:59Z"
    );
    let (path, why) = malformed(created(int(1, 253_402_300_800)));
    assert_eq!(path, "metadata.creationTimestamp");
    assert!(why.contains("outside the years"), "{why}");
    assert!(created(int(1, (-62_167_219_201i64) as u64)).is_err());
}

#[test]
fn a_body_without_the_magic_is_refused() {
    for bad in [
        &b""[..],
        b"k8s",
        b"{\"kind\":\"Namespace\"}",
        b"k8s\x01\x0a\x00",
    ] {
        assert_eq!(decode(bad), Err(DecodeError::NoMagic), "{bad:?}");
    }
    let message = DecodeError::NoMagic.to_string();
    assert!(message.contains("application/json"), "{message}");
}

#[test]
fn a_body_without_type_meta_is_refused() {
    let no_type_meta = [MAGIC.to_vec(), len(2, &meta("c", "demo"))].concat();
    assert_eq!(decode(&no_type_meta), Err(DecodeError::MissingTypeMeta));
    assert_eq!(decode(MAGIC), Err(DecodeError::MissingTypeMeta));
    let no_kind = [MAGIC.to_vec(), len(1, &text(1, "v1"))].concat();
    assert_eq!(
        decode(&no_kind),
        Err(DecodeError::IncompleteTypeMeta("kind"))
    );
    let empty_version = [MAGIC.to_vec(), type_meta("", "Namespace")].concat();
    assert_eq!(
        decode(&empty_version),
        Err(DecodeError::IncompleteTypeMeta("apiVersion"))
    );
}

#[test]
fn an_encoded_or_non_protobuf_raw_is_refused() {
    let framed = |extra: Vec<u8>| {
        [
            MAGIC.to_vec(),
            type_meta("v1", "Namespace"),
            len(2, &[]),
            extra,
        ]
        .concat()
    };
    assert_eq!(
        decode(&framed(text(3, "gzip"))),
        Err(DecodeError::ContentEncoding("gzip".into()))
    );
    assert_eq!(
        decode(&framed(text(4, "application/json"))),
        Err(DecodeError::ContentType("application/json".into()))
    );
    assert!(decode(&framed(text(4, super::CONTENT_TYPE))).is_ok());
}

#[test]
fn a_kind_without_a_schema_is_refused_with_a_hint_to_send_json() {
    let err = decode(&body("apps/v1", "Deployment", &meta("d", "demo"))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kind Deployment (apps/v1) is not served in protobuf; send JSON \
         (kubectl create ... --dry-run=client -o json | kubectl apply -f -)"
    );
    let other_version = decode(&body("policy/v1beta1", "PodDisruptionBudget", &[]));
    assert!(matches!(
        other_version,
        Err(DecodeError::UnsupportedKind { .. })
    ));
}

#[test]
fn a_length_past_the_end_is_an_error_not_an_allocation() {
    let huge = [key(1, 2), varint(1 << 62), text(1, "c")].concat();
    let (path, why) = malformed(decode(&body("v1", "ConfigMap", &huge)));
    assert_eq!(path, "");
    assert_eq!(
        why,
        "a length-delimited field claims 4611686018427387904 bytes but only 3 remain"
    );
    let envelope = [MAGIC.to_vec(), key(2, 2), varint(u64::MAX)].concat();
    assert!(matches!(decode(&envelope), Err(DecodeError::NotUnknown(_))));
}

#[test]
fn a_known_field_with_the_wrong_wire_type_names_its_path() {
    let raw = len(1, &int(1, 5));
    let err = decode(&body("v1", "Namespace", &raw)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the Namespace in the protobuf body cannot be read at metadata.name: \
         field 1 of meta.v1.ObjectMeta holds a string, but a varint arrived"
    );
}

#[test]
fn malformed_wire_bytes_are_refused() {
    let cases: [(Vec<u8>, &str); 5] = [
        (vec![0x80; 11], "a varint runs past 10 bytes"),
        (vec![0x08, 0x80], "the bytes end in the middle of a field"),
        (
            int(1, 1)[1..].to_vec(),
            "field number 0 is outside 1..=536870911",
        ),
        ([key(5, 3)].concat(), "field 5 is a protobuf group"),
        ([key(5, 7)].concat(), "wire type 7 does not exist"),
    ];
    for (raw, expected) in cases {
        let (_, why) = malformed(decode(&body("v1", "ConfigMap", &raw)));
        assert!(why.starts_with(expected), "{raw:?}: {why}");
    }
}

#[test]
fn a_string_that_is_not_utf8_is_refused() {
    let raw = len(1, &len(1, b"\xff\xfe"));
    let (path, why) = malformed(decode(&body("v1", "ConfigMap", &raw)));
    assert_eq!(
        (path.as_str(), why.as_str()),
        ("metadata.name", "the string is not valid UTF-8")
    );
}

#[test]
fn base64_matches_rfc_4648() {
    let cases = [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foobar", "Zm9vYmFy"),
    ];
    for (plain, encoded) in cases {
        assert_eq!(base64(plain.as_bytes()), encoded);
    }
    assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
}

/// Recursion follows the tables, so they must not loop; this also bounds the stack.
#[test]
fn schemas_are_shallow() {
    fn depth(message: &Message, budget: usize) -> usize {
        assert!(budget > 0, "{} nests too deep", message.name);
        let inner = message.fields.iter().filter_map(|f| match f.ty {
            Ty::Nested(schema::Nested::Message(m)) => Some(depth(m, budget - 1)),
            _ => None,
        });
        1 + inner.max().unwrap_or(0)
    }
    for (_, _, message) in schema::KINDS {
        assert!(depth(message, 8) <= 6);
    }
    assert!(depth(&schema::UNKNOWN, 8) <= 2);
}

// Bodies recorded from kubectl 1.32 (fixtures/protobuf/README.md), each with the JSON the same
// kubectl prints for the same command under --dry-run=client -o json.

macro_rules! fixture {
    ($name:literal) => {
        (
            $name,
            include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../fixtures/protobuf/",
                $name,
                ".bin"
            ))
            .as_slice(),
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../fixtures/protobuf/",
                $name,
                ".json"
            )),
        )
    };
}

/// `(name, protobuf body, kubectl's JSON)` for every kind the decoder reads.
const FIXTURES: &[(&str, &[u8], &str)] = &[
    fixture!("namespace"),
    fixture!("configmap"),
    fixture!("secret-generic"),
    fixture!("secret-docker-registry"),
    fixture!("serviceaccount"),
    fixture!("resourcequota"),
    fixture!("service-clusterip"),
    fixture!("service-nodeport"),
    fixture!("service-loadbalancer"),
    fixture!("service-externalname"),
    fixture!("poddisruptionbudget-min"),
    fixture!("poddisruptionbudget-max"),
];

const DEPLOYMENT: (&str, &[u8], &str) = fixture!("deployment");

fn decode_fixture(name: &str) -> Value {
    let (_, bin, _) = FIXTURES.iter().find(|(n, _, _)| *n == name).unwrap();
    decode(bin).unwrap()
}

#[test]
fn every_fixture_reads_as_the_json_kubectl_prints_for_the_same_command() {
    for (name, bin, kubectl_json) in FIXTURES {
        let expected: Value = serde_json::from_str(kubectl_json).unwrap();
        assert_eq!(decode(bin).unwrap(), expected, "fixture {name}");
    }
}

#[test]
fn kubectl_create_namespace() {
    assert_eq!(
        decode_fixture("namespace"),
        json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "demo", "creationTimestamp": null},
            "spec": {}, "status": {},
        })
    );
}

#[test]
fn kubectl_create_configmap_from_literals() {
    assert_eq!(
        decode_fixture("configmap"),
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "demo", "creationTimestamp": null},
            "data": {"a": "b", "x": "y"},
        })
    );
}

#[test]
fn kubectl_create_secret_generic_from_literal() {
    assert_eq!(
        decode_fixture("secret-generic"),
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "demo", "creationTimestamp": null},
            "data": {"token": "bm90LWEtcmVhbC1zZWNyZXQ="},
        })
    );
}

#[test]
fn kubectl_create_serviceaccount() {
    assert_eq!(
        decode_fixture("serviceaccount"),
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "sa", "namespace": "demo", "creationTimestamp": null},
        })
    );
}

#[test]
fn kubectl_create_service_and_pdb_keep_int_or_string_shapes() {
    let service = decode_fixture("service-nodeport");
    assert_eq!(
        service["spec"]["ports"],
        json!([{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080,
                "nodePort": 30080}])
    );
    assert_eq!(
        decode_fixture("poddisruptionbudget-min")["spec"]["minAvailable"],
        1
    );
    assert_eq!(
        decode_fixture("poddisruptionbudget-max")["spec"]["maxUnavailable"],
        "50%"
    );
}

#[test]
fn kubectl_create_deployment_is_refused_with_a_hint_to_send_json() {
    let (_, bin, _) = DEPLOYMENT;
    assert_eq!(
        decode(bin),
        Err(DecodeError::UnsupportedKind {
            api_version: "apps/v1".into(),
            kind: "Deployment".into()
        })
    );
}

// Whatever arrives, decode answers a value or an error and never panics.

fn holds(body: &[u8]) -> Result<(), String> {
    match decode(body) {
        Ok(Value::Object(object))
            if object["apiVersion"].is_string() && object["kind"].is_string() =>
        {
            Ok(())
        }
        Ok(other) => Err(format!("not an object with apiVersion and kind: {other}")),
        Err(e) if e.to_string().is_empty() => Err("an error without a message".into()),
        Err(_) => Ok(()),
    }
}

#[test]
fn every_truncation_of_every_fixture_is_an_error_or_an_object() {
    for (name, bin, _) in FIXTURES.iter().chain([&DEPLOYMENT]) {
        for end in 0..bin.len() {
            holds(&bin[..end]).unwrap_or_else(|e| panic!("{name} cut at {end}: {e}"));
        }
    }
}

/// Well-formed protobuf of random fields, nested a few levels, so that bytes reach the
/// schema-driven decoder instead of failing in the wire reader.
fn arb_message() -> impl Strategy<Value = Vec<u8>> {
    let field = (1u32..25, any::<u64>(), vec(any::<u8>(), 0..12), 0u8..4);
    let flat = vec(field, 0..8).prop_map(|fields| {
        let encode = |(number, n, bytes, wire): (u32, u64, Vec<u8>, u8)| match wire {
            0 => int(number, n),
            1 => [key(number, 1), n.to_le_bytes().to_vec()].concat(),
            2 => len(number, &bytes),
            _ => [key(number, 5), (n as u32).to_le_bytes().to_vec()].concat(),
        };
        fields.into_iter().flat_map(encode).collect::<Vec<u8>>()
    });
    flat.prop_recursive(4, 256, 6, |inner| {
        vec((1u32..25, inner), 1..6).prop_map(|fields| {
            fields
                .into_iter()
                .flat_map(|(number, m)| len(number, &m))
                .collect()
        })
    })
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..512)) {
        prop_assert!(holds(&bytes).is_ok());
        let framed = [MAGIC.to_vec(), bytes].concat();
        prop_assert_eq!(holds(&framed), Ok(()));
    }

    #[test]
    fn random_objects_of_every_kind_never_panic(
        kind in 0..schema::KINDS.len(),
        raw in prop_oneof![vec(any::<u8>(), 0..512), arb_message()],
    ) {
        let (api_version, kind, _) = schema::KINDS[kind];
        prop_assert_eq!(holds(&body(api_version, kind, &raw)), Ok(()));
    }

    #[test]
    fn corrupted_fixtures_never_panic(
        fixture in 0..FIXTURES.len(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut bin = FIXTURES[fixture].1.to_vec();
        for (at, byte) in edits {
            let at = at.index(bin.len());
            bin[at] ^= byte;
        }
        prop_assert_eq!(holds(&bin), Ok(()));
    }
}
