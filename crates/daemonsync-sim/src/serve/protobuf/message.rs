//! A protobuf message, read through its [`schema`] table, as the JSON kubectl would have sent:
//! JSON names, base64 bytes, RFC 3339 times, and fields left out exactly when Go's
//! encoding/json leaves them out.

use super::schema::{self, Field, Message, Nested, Scalar, Shape, Ty};
use super::wire::{self, Entry, Payload, WireError};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// Where in the object a body cannot be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Problem {
    /// The JSON path from the object's root (`spec.ports[0].targetPort`); empty at the root.
    pub path: String,
    /// What is wrong.
    pub why: String,
}

impl Problem {
    fn new(why: impl Into<String>) -> Self {
        Problem {
            path: String::new(),
            why: why.into(),
        }
    }

    /// The same problem seen from the enclosing field or list.
    fn within(mut self, segment: &str) -> Self {
        self.path = match self.path.as_str() {
            "" => segment.to_string(),
            inner if inner.starts_with('[') => format!("{segment}{inner}"),
            inner => format!("{segment}.{inner}"),
        };
        self
    }
}

impl From<WireError> for Problem {
    fn from(e: WireError) -> Self {
        Problem::new(e.to_string())
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path.as_str() {
            "" => write!(f, "{}", self.why),
            path => write!(f, "at {path}: {}", self.why),
        }
    }
}

type Result<T> = std::result::Result<T, Problem>;

/// Reads `bytes` as `message`.
pub(super) fn decode(bytes: &[u8], message: &Message) -> Result<Map<String, Value>> {
    let entries = wire::read_message(bytes)?;
    object(&entries, message.name, message.fields)
}

/// The JSON object of the listed fields among `entries`; other field numbers are skipped.
pub(super) fn object(
    entries: &[Entry],
    owner: &str,
    fields: &[Field],
) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for field in fields {
        let payloads: Vec<Payload> = entries
            .iter()
            .filter(|e| e.number == field.number)
            .map(|e| e.payload)
            .collect();
        let at = At { owner, field };
        if let Some(value) = at.value(&payloads).map_err(|p| p.within(field.json))? {
            out.insert(field.json.to_string(), value);
        }
    }
    Ok(out)
}

/// A field being read, for its type and shape and for error messages.
struct At<'s> {
    owner: &'s str,
    field: &'s Field,
}

impl At<'_> {
    /// The field's JSON, or none when Go would leave it out.
    fn value(&self, payloads: &[Payload]) -> Result<Option<Value>> {
        let ty = self.field.ty;
        Ok(match self.field.shape {
            Shape::List => Some(Value::Array(self.list(payloads)?)).filter(non_empty),
            Shape::Map => Some(Value::Object(self.map(payloads)?)).filter(non_empty),
            Shape::Pointer => self.singular(payloads)?,
            Shape::Value { omitempty } => {
                let value = match self.singular(payloads)? {
                    Some(value) => value,
                    None => zero(ty)?,
                };
                let omitted = omitempty && matches!(ty, Ty::Scalar(_)) && !non_empty(&value);
                (!omitted).then_some(value)
            }
        })
    }

    /// A singular field: the last value wins, and embedded messages sent more than once are
    /// merged, as protobuf specifies.
    fn singular(&self, payloads: &[Payload]) -> Result<Option<Value>> {
        if payloads.is_empty() {
            return Ok(None);
        }
        match self.field.ty {
            Ty::Scalar(scalar) => {
                let mut value = Value::Null;
                for payload in payloads {
                    value = self.scalar(scalar, *payload)?;
                }
                Ok(Some(value))
            }
            Ty::Nested(nested_ty) => nested(nested_ty, &self.joined(payloads)?).map(Some),
        }
    }

    fn joined<'a>(&self, payloads: &[Payload<'a>]) -> Result<Cow<'a, [u8]>> {
        match payloads {
            [one] => self.bytes(*one).map(Cow::Borrowed),
            many => {
                let mut all = Vec::new();
                for payload in many {
                    all.extend_from_slice(self.bytes(*payload)?);
                }
                Ok(Cow::Owned(all))
            }
        }
    }

    fn list(&self, payloads: &[Payload]) -> Result<Vec<Value>> {
        let mut items = Vec::new();
        for payload in payloads {
            let index = items.len();
            let at_item = |p: Problem| p.within(&format!("[{index}]"));
            match (self.field.ty, payload) {
                (Ty::Scalar(s), Payload::Len(packed)) if s.is_varint() => {
                    for v in wire::packed_varints(packed).map_err(Problem::from)? {
                        items.push(varint(s, v));
                    }
                }
                (Ty::Scalar(s), _) => items.push(self.scalar(s, *payload).map_err(at_item)?),
                (Ty::Nested(n), _) => {
                    let item = self.bytes(*payload).and_then(|b| nested(n, b));
                    items.push(item.map_err(at_item)?);
                }
            }
        }
        Ok(items)
    }

    fn map(&self, payloads: &[Payload]) -> Result<Map<String, Value>> {
        let fields = schema::map_entry(self.field.ty);
        let mut out = Map::new();
        for payload in payloads {
            let entries = wire::read_message(self.bytes(*payload)?)?;
            let mut entry = object(&entries, "a map entry", &fields)?;
            let key = match entry.remove("<key>") {
                Some(Value::String(key)) => key,
                _ => String::new(),
            };
            let value = entry.remove("<value>").unwrap_or(Value::Null);
            out.insert(key, value);
        }
        Ok(out)
    }

    fn scalar(&self, scalar: Scalar, payload: Payload) -> Result<Value> {
        match (scalar, payload) {
            (Scalar::String, Payload::Len(bytes)) => std::str::from_utf8(bytes)
                .map(|s| Value::String(s.to_string()))
                .map_err(|_| Problem::new("the string is not valid UTF-8")),
            (Scalar::Bytes, Payload::Len(bytes)) => Ok(Value::String(base64(bytes))),
            (_, Payload::Varint(v)) if scalar.is_varint() => Ok(varint(scalar, v)),
            _ => Err(self.mismatch(scalar.describe(), payload)),
        }
    }

    fn bytes<'a>(&self, payload: Payload<'a>) -> Result<&'a [u8]> {
        match payload {
            Payload::Len(bytes) => Ok(bytes),
            other => Err(self.mismatch("a message", other)),
        }
    }

    fn mismatch(&self, expected: &str, found: Payload) -> Problem {
        Problem::new(format!(
            "field {} of {} holds {expected}, but {} arrived",
            self.field.number,
            self.owner,
            found.wire_name()
        ))
    }
}

fn non_empty(value: &Value) -> bool {
    match value {
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_i64() != Some(0),
        Value::Bool(b) => *b,
        Value::Array(items) => !items.is_empty(),
        Value::Object(fields) => !fields.is_empty(),
        Value::Null => false,
    }
}

/// Go's conversions: int32 fields keep the low 32 bits, as Go's decoder does.
fn varint(scalar: Scalar, v: u64) -> Value {
    match scalar {
        Scalar::Int32 => Value::from(v as i32),
        Scalar::Bool => Value::Bool(v != 0),
        _ => Value::from(v as i64),
    }
}

/// What Go writes for a value field that was not on the wire.
fn zero(ty: Ty) -> Result<Value> {
    Ok(match ty {
        Ty::Scalar(Scalar::String | Scalar::Bytes) => Value::from(""),
        Ty::Scalar(Scalar::Int64 | Scalar::Int32) => Value::from(0),
        Ty::Scalar(Scalar::Bool) => Value::Bool(false),
        Ty::Nested(Nested::Time) => Value::Null,
        Ty::Nested(Nested::Quantity) => Value::from("0"),
        Ty::Nested(Nested::IntOrString) => Value::from(0),
        Ty::Nested(Nested::Message(message)) => Value::Object(decode(&[], message)?),
    })
}

fn nested(ty: Nested, bytes: &[u8]) -> Result<Value> {
    match ty {
        Nested::Message(message) => decode(bytes, message).map(Value::Object),
        Nested::Time => time(bytes),
        Nested::Quantity => quantity(bytes),
        Nested::IntOrString => int_or_string(bytes),
    }
}

/// Seconds only, as Kubernetes keeps them: its own protobuf decoder drops the nanoseconds
/// too, and its JSON has none.
fn time(bytes: &[u8]) -> Result<Value> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    let fields = decode(bytes, &schema::TIME_MESSAGE)?;
    let seconds = fields.get("seconds").and_then(Value::as_i64).unwrap_or(0);
    rfc3339(seconds).map(Value::String).ok_or_else(|| {
        Problem::new(format!(
            "the time {seconds}s after 1970 is outside the years 0000 to 9999"
        ))
    })
}

/// The form Go's `time.RFC3339` gives a UTC time with whole seconds.
fn rfc3339(seconds: i64) -> Option<String> {
    let epoch = jiff::civil::DateTime::constant(1970, 1, 1, 0, 0, 0, 0);
    let at = epoch
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .ok()?;
    (at.year() >= 0).then(|| at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// The string as sent: the API server checks a quantity when it reads the JSON.
fn quantity(bytes: &[u8]) -> Result<Value> {
    let fields = decode(bytes, &schema::QUANTITY_MESSAGE)?;
    match fields.get("string") {
        None => Ok(Value::from("0")),
        Some(Value::String(s)) if s.is_empty() => Err(Problem::new("a quantity is empty")),
        Some(value) => Ok(value.clone()),
    }
}

fn int_or_string(bytes: &[u8]) -> Result<Value> {
    let fields = decode(bytes, &schema::INT_OR_STRING_MESSAGE)?;
    let field = |name: &str| fields.get(name).cloned().unwrap_or(Value::Null);
    match fields.get("type").and_then(Value::as_i64) {
        Some(0) => Ok(field("intVal")),
        Some(1) => Ok(field("strVal")),
        other => Err(Problem::new(format!(
            "an IntOrString has type {}, neither 0 (int) nor 1 (string)",
            other.unwrap_or_default()
        ))),
    }
}

/// Standard base64 with padding, as Go's encoding/json writes `[]byte`.
pub(super) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
