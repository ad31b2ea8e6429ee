//! The protobuf wire format as Kubernetes uses it: a message is a run of fields, each a key
//! (field number and wire type) followed by a varint, 8 or 4 fixed bytes, or a length-prefixed
//! run of bytes. Nothing here knows what a field means; [`super::message`] does.

use std::fmt;

/// The highest field number protobuf allows (2^29 - 1).
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;
/// A varint of a 64-bit value takes at most 10 bytes.
const MAX_VARINT_BYTES: usize = 10;

/// One field as it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Entry<'a> {
    /// The field number.
    pub number: u32,
    /// What followed the key.
    pub payload: Payload<'a>,
}

/// A field's payload, by wire type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Payload<'a> {
    /// Wire type 0: integers and booleans.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: strings, bytes, embedded messages and packed repeated scalars.
    Len(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

impl Payload<'_> {
    /// How the payload was encoded, for error messages.
    pub fn wire_name(&self) -> &'static str {
        match self {
            Payload::Varint(_) => "a varint",
            Payload::Fixed64(_) => "a fixed64",
            Payload::Len(_) => "length-delimited bytes",
            Payload::Fixed32(_) => "a fixed32",
        }
    }
}

/// Why bytes are not a protobuf message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum WireError {
    /// The bytes end inside a key, a varint or a fixed-size value.
    Truncated,
    /// A length prefix claims more bytes than remain.
    LengthPastEnd {
        /// The claimed length.
        claimed: u64,
        /// The bytes left.
        left: usize,
    },
    /// A varint longer than any 64-bit value needs.
    VarintTooLong,
    /// A field number of 0 or above 2^29 - 1.
    FieldNumber(u64),
    /// Wire types 3 and 4 (proto2 groups), which Kubernetes never sends.
    Group(u64),
    /// Wire types 6 and 7, which protobuf does not define.
    WireType(u64),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated => write!(f, "the bytes end in the middle of a field"),
            WireError::LengthPastEnd { claimed, left } => write!(
                f,
                "a length-delimited field claims {claimed} bytes but only {left} remain"
            ),
            WireError::VarintTooLong => write!(f, "a varint runs past {MAX_VARINT_BYTES} bytes"),
            WireError::FieldNumber(n) => {
                write!(f, "field number {n} is outside 1..={MAX_FIELD_NUMBER}")
            }
            WireError::Group(n) => write!(
                f,
                "field {n} is a protobuf group, which Kubernetes objects never contain"
            ),
            WireError::WireType(t) => write!(f, "wire type {t} does not exist in protobuf"),
        }
    }
}

/// Splits a message into its fields, in wire order. Payloads borrow from `bytes`; nothing is
/// allocated per field beyond the entry itself, whatever a length prefix claims.
pub(super) fn read_message(bytes: &[u8]) -> Result<Vec<Entry<'_>>, WireError> {
    let mut reader = Reader { rest: bytes };
    let mut entries = Vec::new();
    while !reader.rest.is_empty() {
        entries.push(reader.entry()?);
    }
    Ok(entries)
}

/// Reads a packed repeated scalar field: varints back to back.
pub(super) fn packed_varints(bytes: &[u8]) -> Result<Vec<u64>, WireError> {
    let mut reader = Reader { rest: bytes };
    let mut values = Vec::new();
    while !reader.rest.is_empty() {
        values.push(reader.varint()?);
    }
    Ok(values)
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn entry(&mut self) -> Result<Entry<'a>, WireError> {
        let key = self.varint()?;
        let number = key >> 3;
        if number == 0 || number > MAX_FIELD_NUMBER {
            return Err(WireError::FieldNumber(number));
        }
        let payload = match key & 7 {
            0 => Payload::Varint(self.varint()?),
            1 => Payload::Fixed64(u64::from_le_bytes(self.fixed()?)),
            2 => {
                let len = self.varint()?;
                Payload::Len(self.take(len)?)
            }
            3 | 4 => return Err(WireError::Group(number)),
            5 => Payload::Fixed32(u32::from_le_bytes(self.fixed()?)),
            other => return Err(WireError::WireType(other)),
        };
        Ok(Entry {
            number: number as u32,
            payload,
        })
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let mut value = 0u64;
        for (i, &byte) in self.rest.iter().enumerate().take(MAX_VARINT_BYTES) {
            // Bits beyond 64 in a tenth byte are dropped, as Go's decoder does.
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                self.rest = &self.rest[i + 1..];
                return Ok(value);
            }
        }
        if self.rest.len() >= MAX_VARINT_BYTES {
            Err(WireError::VarintTooLong)
        } else {
            Err(WireError::Truncated)
        }
    }

    /// Checks the claimed length against what remains before slicing, so a forged prefix
    /// costs nothing.
    fn take(&mut self, len: u64) -> Result<&'a [u8], WireError> {
        let left = self.rest.len();
        match usize::try_from(len) {
            Ok(n) if n <= left => {
                let (taken, rest) = self.rest.split_at(n);
                self.rest = rest;
                Ok(taken)
            }
            _ => Err(WireError::LengthPastEnd { claimed: len, left }),
        }
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let (head, rest) = self
            .rest
            .split_first_chunk::<N>()
            .ok_or(WireError::Truncated)?;
        self.rest = rest;
        Ok(*head)
    }
}
