//! JSON read as strictly as the API server decodes it: a key named twice in one object is
//! refused, where serde_json alone would keep the last silently. (The YAML parser refuses
//! duplicate keys itself; these types cost it little more.)

use serde::de::{Deserialize, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::fmt;

/// A JSON value that refuses duplicate object keys.
pub struct StrictValue(pub Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        StrictValue::deserialize(d).map(|v| v.0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(duplicate(&key));
            }
            let StrictValue(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// The error for a key named twice.
pub fn duplicate<E: Error>(key: &str) -> E {
    E::custom(format_args!(
        "duplicate key {key:?}; a JSON object may name each field once"
    ))
}

/// A mapping key, borrowed from the text when it needs no unescaping.
pub struct Key<'de>(pub Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// The keys seen so far in one mapping: a short list (most objects have a few keys), a hash
/// set once it grows, so that a hostile object of a million keys stays linear.
#[derive(Default)]
pub struct SeenKeys<'de> {
    few: SmallVec<[Cow<'de, str>; 12]>,
    many: rustc_hash::FxHashSet<Cow<'de, str>>,
}

impl<'de> SeenKeys<'de> {
    /// Records `key`; a key seen before is an error.
    pub fn insert<E: Error>(&mut self, key: Cow<'de, str>) -> Result<(), E> {
        let seen = if self.many.is_empty() {
            self.few.contains(&key)
        } else {
            self.many.contains(&key)
        };
        if seen {
            return Err(duplicate(&key));
        }
        if self.few.len() < self.few.inline_size() {
            self.few.push(key);
        } else {
            if self.many.is_empty() {
                self.many.extend(self.few.drain(..));
            }
            self.many.insert(key);
        }
        Ok(())
    }
}

/// Any value, skipped without allocating (keys and strings are borrowed where the text holds
/// them verbatim), refusing duplicate keys at any depth.
pub struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Not `deserialize_ignored_any`: serde_json skips such values without looking at
        // their keys.
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i128<E>(self, _: i128) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u128<E>(self, _: u128) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_bytes<E>(self, _: &[u8]) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_none<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Skip, D::Error> {
        Skip::deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Skip, D::Error> {
        Skip::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        let mut seen = SeenKeys::default();
        while let Some(Key(key)) = map.next_key()? {
            seen.insert(key)?;
            map.next_value::<Skip>()?;
        }
        Ok(Skip)
    }
}
