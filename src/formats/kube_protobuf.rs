//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) read straight into the
//! serde types the JSON is read into: a [`serde::Deserializer`] that walks the wire format with
//! the table of [`kube_protobuf_schema`](super::kube_protobuf_schema) (field numbers, JSON
//! names), so a `k8s_openapi` Pod decoded from protobuf equals the one decoded from the server's
//! JSON for the same object. The API server encodes protobuf in a fraction of the time it takes
//! for JSON, and this side skips tokenizing text.
//!
//! What the JSON form does differently is done here: fields of a non-pointer Go type with
//! `omitempty` and a zero value are skipped (protobuf writes them, JSON leaves them out); `inline`
//! messages are flattened into their parent; `Time` is an RFC 3339 string to the second and
//! `MicroTime` to the microsecond (a zero time is `null`); `Quantity` is its string;
//! `IntOrString` is a number or a string; `FieldsV1` and `RawExtension` hold JSON. Anything else
//! unexpected (a wire type that does not fit the table, a truncated field) is an error, never a
//! guess; unknown field numbers (a newer server's fields) are skipped, as JSON's unknown keys are.

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

/// One message of the table: its fields by ascending number.
pub struct Message {
    /// The Go type (`v1.Pod`), for errors.
    pub name: &'static str,
    pub fields: &'static [Field],
}

/// One field of a message.
#[derive(Clone, Copy)]
pub struct Field {
    pub number: u32,
    /// Its name in JSON (empty for an `inline` one).
    pub json: &'static str,
    /// The kind of its value (of each element when `repeated`; of each value when `map`).
    pub kind: Kind,
    pub repeated: bool,
    /// A map from strings: entries of key (1) and value (2).
    pub map: bool,
    /// JSON leaves the field out when its value is zero (`omitempty` on a non-pointer scalar).
    pub omit_zero: bool,
    /// Its message's fields are its parent's in JSON (`json:",inline"`).
    pub inline: bool,
}

impl Field {
    /// A field as the generated table writes it: single, kept when zero, not inline.
    pub const fn new(number: u32, json: &'static str, kind: Kind) -> Field {
        Field {
            number,
            json,
            kind,
            repeated: false,
            map: false,
            omit_zero: false,
            inline: false,
        }
    }

    pub const fn repeated(self) -> Field {
        Field {
            repeated: true,
            ..self
        }
    }

    pub const fn map(self) -> Field {
        Field { map: true, ..self }
    }

    pub const fn omit_zero(self) -> Field {
        Field {
            omit_zero: true,
            ..self
        }
    }

    pub const fn inline(self) -> Field {
        Field {
            inline: true,
            ..self
        }
    }
}

/// A kind of object: its table of messages and which of them it is.
#[derive(Clone, Copy)]
pub struct Root {
    pub messages: &'static [Message],
    pub index: u16,
}

/// What a field's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    String,
    Bool,
    Int32,
    Int64,
    /// A message of the table, by index.
    Message(u16),
    Time,
    MicroTime,
    Quantity,
    IntOrString,
    /// Bytes that hold JSON.
    Json,
    /// Never read (`metadata.managedFields`).
    Skip,
}

/// A decoding error: what was wrong and where (the message's Go type).
#[derive(Debug, thiserror::Error)]
#[error("protobuf: {0}")]
pub struct DecodeError(String);

impl de::Error for DecodeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        DecodeError(msg.to_string())
    }
}

fn error(text: impl Into<String>) -> DecodeError {
    DecodeError(text.into())
}

/// A field's value as the wire has it.
#[derive(Clone, Copy, Debug)]
enum Raw<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

impl Raw<'_> {
    fn is_zero(self) -> bool {
        match self {
            Raw::Varint(v) | Raw::Fixed64(v) => v == 0,
            Raw::Fixed32(v) => v == 0,
            Raw::Bytes(b) => b.is_empty(),
        }
    }
}

/// A reader of one message's fields.
#[derive(Clone, Copy)]
struct Wire<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Wire<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Wire { buf, at: 0 }
    }

    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.buf.get(self.at) else {
                return Err(error("truncated varint"));
            };
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(error("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| error("truncated field"))?;
        let out = &self.buf[self.at..end];
        self.at = end;
        Ok(out)
    }

    /// The next field: its number and value; `None` at the end.
    fn next(&mut self) -> Result<Option<(u32, Raw<'a>)>, DecodeError> {
        if self.at >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| error("field number too large"))?;
        let raw = match key & 7 {
            0 => Raw::Varint(self.varint()?),
            1 => Raw::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().unwrap())),
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| error("length too large"))?;
                Raw::Bytes(self.take(n)?)
            }
            5 => Raw::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().unwrap())),
            other => return Err(error(format!("unsupported wire type {other}"))),
        };
        Ok(Some((number, raw)))
    }

    /// The next field if it has this number (a repeated field's next element).
    fn next_if(&mut self, number: u32) -> Result<Option<Raw<'a>>, DecodeError> {
        let mut ahead = *self;
        match ahead.next()? {
            Some((n, raw)) if n == number => {
                *self = ahead;
                Ok(Some(raw))
            }
            _ => Ok(None),
        }
    }
}

/// The fields of a small message by number (`Timestamp`, `Quantity`, `IntOrString`, a map
/// entry): the last occurrence of each of the first eight numbers.
fn small_message(bytes: &[u8]) -> Result<[Option<Raw<'_>>; 8], DecodeError> {
    let mut out = [None; 8];
    let mut wire = Wire::new(bytes);
    while let Some((number, raw)) = wire.next()? {
        if let Some(slot) = out.get_mut(number as usize) {
            *slot = Some(raw);
        }
    }
    Ok(out)
}

fn bytes_of<'a>(raw: Raw<'a>, what: &str) -> Result<&'a [u8], DecodeError> {
    match raw {
        Raw::Bytes(b) => Ok(b),
        other => Err(error(format!("{what}: expected bytes, found {other:?}"))),
    }
}

fn varint_of(raw: Raw<'_>, what: &str) -> Result<u64, DecodeError> {
    match raw {
        Raw::Varint(v) => Ok(v),
        other => Err(error(format!("{what}: expected a varint, found {other:?}"))),
    }
}

fn str_of<'a>(raw: Raw<'a>, what: &str) -> Result<&'a str, DecodeError> {
    std::str::from_utf8(bytes_of(raw, what)?).map_err(|_| error(format!("{what}: not UTF-8")))
}

/// A list's answer: `k8s\0`, then a `runtime.Unknown` whose `raw` is the list, whose metadata
/// (1) comes before its items (2).
pub struct List<'a> {
    /// The continue token, `None` when empty.
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub remaining_item_count: Option<i64>,
    /// Each item's message.
    pub items: Vec<&'a [u8]>,
}

/// The magic bytes before every protobuf-encoded object of the API server.
pub const MAGIC: &[u8] = b"k8s\0";

/// The object an answer holds: `runtime.Unknown`'s `raw`, after the magic bytes.
pub fn object(body: &[u8]) -> Result<&[u8], DecodeError> {
    let unknown = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| error("the answer does not start with the protobuf magic k8s\\0"))?;
    let mut raw = None;
    let mut wire = Wire::new(unknown);
    while let Some((number, value)) = wire.next()? {
        match number {
            2 => raw = Some(bytes_of(value, "runtime.Unknown.raw")?),
            3 if !value.is_zero() => {
                return Err(error("the answer has a content encoding (compressed)"));
            }
            _ => {}
        }
    }
    raw.ok_or_else(|| error("the answer has no object"))
}

/// Reads a list's envelope: its metadata and where its items are (not decoded).
pub fn list(body: &[u8]) -> Result<List<'_>, DecodeError> {
    let raw = object(body)?;
    let mut out = List {
        continue_token: None,
        resource_version: None,
        remaining_item_count: None,
        items: Vec::new(),
    };
    let mut wire = Wire::new(raw);
    while let Some((number, value)) = wire.next()? {
        match number {
            1 => {
                let meta = small_message(bytes_of(value, "ListMeta")?)?;
                let text = |raw: Option<Raw<'_>>, what| -> Result<Option<String>, DecodeError> {
                    match raw {
                        Some(raw) => {
                            Ok(Some(str_of(raw, what)?.to_string()).filter(|s| !s.is_empty()))
                        }
                        None => Ok(None),
                    }
                };
                out.resource_version = text(meta[2], "ListMeta.resourceVersion")?;
                out.continue_token = text(meta[3], "ListMeta.continue")?;
                out.remaining_item_count = match meta[4] {
                    Some(raw) => Some(varint_of(raw, "ListMeta.remainingItemCount")? as i64),
                    None => None,
                };
            }
            2 => out.items.push(bytes_of(value, "items")?),
            _ => {}
        }
    }
    Ok(out)
}

/// Decodes one object of the kind `root` into `T`.
pub fn decode<'a, T: serde::Deserialize<'a>>(
    bytes: &'a [u8],
    root: Root,
) -> Result<T, DecodeError> {
    T::deserialize(MessageDeserializer {
        bytes,
        table: root.messages,
        message: message(root.messages, root.index)?,
    })
}

/// The messages a kind's fields refer to by index.
type Table = &'static [Message];

fn message(table: Table, index: u16) -> Result<&'static Message, DecodeError> {
    table
        .get(usize::from(index))
        .ok_or_else(|| error(format!("no message {index} in the table")))
}

/// A message, deserialized as a map of its JSON names.
struct MessageDeserializer<'a> {
    bytes: &'a [u8],
    table: Table,
    message: &'static Message,
}

impl<'de> de::Deserializer<'de> for MessageDeserializer<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_map(Fields::new(self.bytes, self.table, self.message))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct enum identifier
    }
}

/// A field's value waiting for `next_value`.
enum Pending<'a> {
    One(Kind, Raw<'a>),
    /// A repeated or map field: the run of its occurrences, and how many there are.
    Run {
        kind: Kind,
        map: bool,
        run: Wire<'a>,
        count: usize,
    },
}

/// How deep inline messages nest in one another (Kubernetes has at most two levels).
const INLINE_DEPTH: usize = 4;

/// The fields of a message and of the inline messages in it, as map entries.
struct Fields<'a> {
    table: Table,
    /// The message, then the inline messages being read in it.
    stack: [(Wire<'a>, &'static Message); INLINE_DEPTH],
    depth: usize,
    value: Option<Pending<'a>>,
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8], table: Table, message: &'static Message) -> Self {
        Fields {
            table,
            stack: [(Wire::new(bytes), message); INLINE_DEPTH],
            depth: 1,
            value: None,
        }
    }

    /// The next field JSON shows: its schema and value.
    fn next_field(&mut self) -> Result<Option<(&'static Field, Pending<'a>)>, DecodeError> {
        loop {
            if self.depth == 0 {
                return Ok(None);
            }
            let (wire, message) = &mut self.stack[self.depth - 1];
            let message: &'static Message = message;
            let start = wire.at;
            let Some((number, raw)) = wire.next()? else {
                self.depth -= 1;
                continue;
            };
            let Ok(at) = message.fields.binary_search_by_key(&number, |f| f.number) else {
                continue; // a field this table does not know (a newer server's)
            };
            let field = &message.fields[at];
            if field.kind == Kind::Skip {
                continue;
            }
            if field.inline {
                let Kind::Message(index) = field.kind else {
                    return Err(error(format!(
                        "{}: inline field {number} is no message",
                        message.name
                    )));
                };
                let bytes = bytes_of(raw, message.name)?;
                if self.depth == INLINE_DEPTH {
                    return Err(error(format!(
                        "{}: inline messages nest too deep",
                        message.name
                    )));
                }
                self.stack[self.depth] = (Wire::new(bytes), self::message(self.table, index)?);
                self.depth += 1;
                continue;
            }
            if field.repeated || field.map {
                // The run of this field's occurrences (they come one after the other), read
                // lazily by the sequence or map the value becomes.
                let mut count = 1;
                while wire.next_if(number)?.is_some() {
                    count += 1;
                }
                let run = Wire::new(&wire.buf[start..wire.at]);
                let pending = Pending::Run {
                    kind: field.kind,
                    map: field.map,
                    run,
                    count,
                };
                return Ok(Some((field, pending)));
            }
            if field.omit_zero && raw.is_zero() {
                continue;
            }
            return Ok(Some((field, Pending::One(field.kind, raw))));
        }
    }
}

impl<'de> de::MapAccess<'de> for Fields<'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        match self.next_field()? {
            None => Ok(None),
            Some((field, pending)) => {
                self.value = Some(pending);
                seed.deserialize(de::value::BorrowedStrDeserializer::new(field.json))
                    .map(Some)
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        match self.value.take() {
            Some(Pending::One(kind, raw)) => seed.deserialize(Value {
                table: self.table,
                kind,
                raw,
            }),
            Some(Pending::Run {
                kind,
                map: false,
                run,
                count,
            }) => seed.deserialize(Elements {
                table: self.table,
                kind,
                run,
                packed: None,
                left: count,
            }),
            Some(Pending::Run {
                kind,
                map: true,
                run,
                count,
            }) => seed.deserialize(Entries {
                table: self.table,
                kind,
                run,
                value: None,
                left: count,
            }),
            None => Err(error("a value asked for before its key")),
        }
    }
}

/// A repeated field's elements, as a sequence; a packed run of numbers (one length-delimited
/// field) gives each of its numbers.
struct Elements<'a> {
    table: Table,
    kind: Kind,
    run: Wire<'a>,
    /// The numbers of a packed field being read.
    packed: Option<Wire<'a>>,
    /// Fields of the run not read yet (a hint).
    left: usize,
}

impl<'de> de::Deserializer<'de> for Elements<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_seq(self)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_some(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier
    }
}

impl<'de> de::SeqAccess<'de> for Elements<'de> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        loop {
            if let Some(packed) = &mut self.packed {
                if packed.at < packed.buf.len() {
                    let raw = Raw::Varint(packed.varint()?);
                    return seed
                        .deserialize(Value {
                            table: self.table,
                            kind: self.kind,
                            raw,
                        })
                        .map(Some);
                }
                self.packed = None;
            }
            let Some((_, raw)) = self.run.next()? else {
                return Ok(None);
            };
            self.left = self.left.saturating_sub(1);
            match (self.kind, raw) {
                (Kind::Bool | Kind::Int32 | Kind::Int64, Raw::Bytes(packed)) => {
                    self.packed = Some(Wire::new(packed));
                }
                _ => {
                    return seed
                        .deserialize(Value {
                            table: self.table,
                            kind: self.kind,
                            raw,
                        })
                        .map(Some);
                }
            }
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// A map field's entries (key 1, value 2), as a map.
struct Entries<'a> {
    table: Table,
    kind: Kind,
    run: Wire<'a>,
    value: Option<Raw<'a>>,
    /// Entries not read yet.
    left: usize,
}

impl<'de> de::Deserializer<'de> for Entries<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_map(self)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_some(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier
    }
}

impl<'de> de::MapAccess<'de> for Entries<'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        let Some((_, entry)) = self.run.next()? else {
            return Ok(None);
        };
        self.left = self.left.saturating_sub(1);
        let fields = small_message(bytes_of(entry, "map entry")?)?;
        let key = match fields[1] {
            Some(raw) => str_of(raw, "map key")?,
            None => "",
        };
        // An absent value is the zero value of its kind.
        self.value = Some(fields[2].unwrap_or(match self.kind {
            Kind::Bool | Kind::Int32 | Kind::Int64 => Raw::Varint(0),
            _ => Raw::Bytes(&[]),
        }));
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        let raw = self
            .value
            .take()
            .ok_or_else(|| error("a map value asked for before its key"))?;
        seed.deserialize(Value {
            table: self.table,
            kind: self.kind,
            raw,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// One value of a field.
struct Value<'a> {
    table: Table,
    kind: Kind,
    raw: Raw<'a>,
}

/// `Timestamp`'s seconds (1) and nanoseconds (2); `None` for the zero time.
fn timestamp(raw: Raw<'_>) -> Result<Option<(i64, i32)>, DecodeError> {
    let fields = small_message(bytes_of(raw, "Time")?)?;
    let seconds = match fields[1] {
        Some(raw) => varint_of(raw, "Time.seconds")? as i64,
        None => 0,
    };
    let nanos = match fields[2] {
        Some(raw) => varint_of(raw, "Time.nanos")? as i64 as i32,
        None => 0,
    };
    Ok((seconds != 0 || nanos != 0).then_some((seconds, nanos)))
}

/// The JSON text of a `Time` (to the second) or `MicroTime` (to the microsecond).
fn time_text(seconds: i64, nanos: i32, micro: bool) -> Result<String, DecodeError> {
    let nanos = if micro { nanos / 1000 * 1000 } else { 0 };
    let at = jiff::Timestamp::new(seconds, nanos).map_err(|e| error(format!("Time: {e}")))?;
    Ok(if micro {
        format!("{at:.6}")
    } else {
        format!("{at:.0}")
    })
}

impl<'de> de::Deserializer<'de> for Value<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.kind {
            Kind::String => visitor.visit_borrowed_str(str_of(self.raw, "string")?),
            Kind::Bool => visitor.visit_bool(varint_of(self.raw, "bool")? != 0),
            Kind::Int32 => visitor.visit_i64(i64::from(varint_of(self.raw, "int32")? as i32)),
            Kind::Int64 => visitor.visit_i64(varint_of(self.raw, "int64")? as i64),
            Kind::Message(index) => MessageDeserializer {
                bytes: bytes_of(self.raw, "message")?,
                table: self.table,
                message: message(self.table, index)?,
            }
            .deserialize_any(visitor),
            Kind::Time | Kind::MicroTime => match timestamp(self.raw)? {
                Some((seconds, nanos)) => {
                    visitor.visit_string(time_text(seconds, nanos, self.kind == Kind::MicroTime)?)
                }
                None => visitor.visit_unit(),
            },
            Kind::Quantity => {
                let fields = small_message(bytes_of(self.raw, "Quantity")?)?;
                match fields[1] {
                    Some(raw) => visitor.visit_borrowed_str(str_of(raw, "Quantity")?),
                    None => visitor.visit_borrowed_str("0"),
                }
            }
            Kind::IntOrString => {
                let fields = small_message(bytes_of(self.raw, "IntOrString")?)?;
                let kind = match fields[1] {
                    Some(raw) => varint_of(raw, "IntOrString.type")?,
                    None => 0,
                };
                if kind == 1 {
                    match fields[3] {
                        Some(raw) => visitor.visit_borrowed_str(str_of(raw, "IntOrString.strVal")?),
                        None => visitor.visit_borrowed_str(""),
                    }
                } else {
                    let value = match fields[2] {
                        Some(raw) => varint_of(raw, "IntOrString.intVal")? as i32,
                        None => 0,
                    };
                    visitor.visit_i64(i64::from(value))
                }
            }
            Kind::Json => {
                let fields = small_message(bytes_of(self.raw, "raw JSON")?)?;
                let text = match fields[1] {
                    Some(raw) => bytes_of(raw, "raw JSON")?,
                    None => return visitor.visit_unit(),
                };
                let mut json = serde_json::Deserializer::from_slice(text);
                de::Deserializer::deserialize_any(&mut json, visitor)
                    .map_err(|e| error(format!("raw JSON: {e}")))
            }
            Kind::Skip => visitor.visit_unit(),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let zero_time =
            matches!(self.kind, Kind::Time | Kind::MicroTime) && timestamp(self.raw)?.is_none();
        if zero_time {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_enum(str_of(self.raw, "enum")?.into_deserializer())
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::formats::kube_protobuf_schema as schema;
    use k8s_openapi::api::core::v1::{Namespace, Pod, Service};

    /// A real server's answer of `tests/fixtures/kube-protobuf/`.
    pub(crate) fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/tests/fixtures/kube-protobuf/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The same list as the server sent it in JSON (without managedFields, as read) and in
    /// protobuf decodes to equal objects.
    fn same_as_json<T>(name: &str, kind: Root) -> Vec<T>
    where
        T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + serde::Serialize + Clone,
    {
        let json: kube::core::ObjectList<T> =
            serde_json::from_slice(&fixture(&format!("{name}.json"))).unwrap();
        let body = fixture(&format!("{name}.pb"));
        let listed = list(&body).unwrap();
        assert_eq!(listed.resource_version, json.metadata.resource_version);
        assert_eq!(listed.continue_token, None);
        let items: Vec<T> = listed
            .items
            .iter()
            .map(|b| decode(b, kind).unwrap())
            .collect();
        assert_eq!(items.len(), json.items.len());
        for (from_protobuf, from_json) in items.iter().zip(&json.items) {
            assert_eq!(
                serde_json::to_string_pretty(from_protobuf).unwrap(),
                serde_json::to_string_pretty(from_json).unwrap()
            );
            assert_eq!(from_protobuf, from_json);
        }
        items
    }

    #[test]
    fn real_pods_decode_as_their_json_does() {
        let pods: Vec<Pod> = same_as_json("pods", schema::POD);
        assert_eq!(pods.len(), 7);
        // What the table's special cases are for, seen in the fixture: a native sidecar with
        // its probes (IntOrString ports), resources (Quantity), runAsUser 0 kept (a pointer),
        // times, and a deleted pod's deletionTimestamp.
        let ok = pods
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some("ok"))
            .unwrap();
        let spec = ok.spec.as_ref().unwrap();
        let proxy = spec
            .init_containers
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.name == "istio-proxy")
            .unwrap();
        assert_eq!(proxy.restart_policy.as_deref(), Some("Always"));
        assert!(proxy.readiness_probe.as_ref().unwrap().http_get.is_some());
        assert!(
            proxy
                .resources
                .as_ref()
                .unwrap()
                .requests
                .as_ref()
                .unwrap()
                .contains_key("cpu")
        );
        assert!(ok.metadata.creation_timestamp.is_some());
        assert!(pods.iter().any(|p| p.metadata.deletion_timestamp.is_some()));
    }

    #[test]
    fn real_services_and_namespaces_decode_as_their_json_does() {
        let services: Vec<Service> = same_as_json("services", schema::SERVICE);
        assert_eq!(services.len(), 4);
        let namespaces: Vec<Namespace> = same_as_json("namespaces", schema::NAMESPACE);
        assert_eq!(namespaces.len(), 2);
    }

    /// One object of each other kind listed in protobuf, written with most of its fields (see
    /// tests/fixtures/README.md), decodes as its JSON does.
    #[test]
    fn every_other_kind_decodes_as_its_json_does() {
        use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
        use k8s_openapi::api::batch::v1::CronJob;
        use k8s_openapi::api::core::v1::{Event, Node};
        use k8s_openapi::api::discovery::v1::EndpointSlice;
        use k8s_openapi::api::networking::v1::NetworkPolicy;
        use k8s_openapi::api::policy::v1::PodDisruptionBudget;
        let nodes: Vec<Node> = same_as_json("nodes", schema::NODE);
        assert!(nodes[0].status.as_ref().unwrap().images.is_some());
        let events: Vec<Event> = same_as_json("events", schema::EVENT);
        // A MicroTime, to the microsecond, and a zero one (null in JSON).
        assert!(events.iter().any(|e| e.event_time.is_some()));
        assert!(events.iter().any(|e| e.event_time.is_none()));
        let deployments: Vec<Deployment> = same_as_json("deployments", schema::DEPLOYMENT);
        assert!(deployments[0].status.as_ref().unwrap().conditions.is_some());
        let _: Vec<StatefulSet> = same_as_json("statefulsets", schema::STATEFUL_SET);
        let _: Vec<DaemonSet> = same_as_json("daemonsets", schema::DAEMON_SET);
        let _: Vec<CronJob> = same_as_json("cronjobs", schema::CRON_JOB);
        let _: Vec<EndpointSlice> = same_as_json("endpointslices", schema::ENDPOINT_SLICE);
        let _: Vec<NetworkPolicy> = same_as_json("networkpolicies", schema::NETWORK_POLICY);
        let _: Vec<PodDisruptionBudget> =
            same_as_json("poddisruptionbudgets", schema::POD_DISRUPTION_BUDGET);
    }

    /// A field: key, then the value as the wire type needs it.
    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    fn bytes_field(number: u32, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(u64::from(number) << 3 | 2, &mut out);
        varint(value.len() as u64, &mut out);
        out.extend_from_slice(value);
        out
    }
    fn varint_field(number: u32, value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(u64::from(number) << 3, &mut out);
        varint(value, &mut out);
        out
    }

    #[test]
    fn zero_values_json_leaves_out_are_left_out_and_pointers_kept() {
        // ObjectMeta: name (1) "", generateName (2) "", creationTimestamp (8) the zero time.
        let meta = [
            bytes_field(1, b""),
            bytes_field(2, b""),
            bytes_field(8, b""),
        ]
        .concat();
        // PodSpec: priority (25, a pointer) 0.
        let spec = varint_field(25, 0);
        let pod = [bytes_field(1, &meta), bytes_field(2, &spec)].concat();
        let pod: Pod = decode(&pod, schema::POD).unwrap();
        assert_eq!(pod.metadata.name, None);
        assert_eq!(pod.metadata.generate_name, None);
        assert_eq!(pod.metadata.creation_timestamp, None);
        assert_eq!(pod.spec.unwrap().priority, Some(0));
    }

    #[test]
    fn negative_numbers_unknown_fields_and_packed_repeats() {
        // priority -5 (ten bytes, sign-extended), then a field no table has.
        let spec = [
            varint_field(25, -5i64 as u64),
            varint_field(999, 1),
            bytes_field(998, b"x"),
        ]
        .concat();
        // PodSecurityContext.supplementalGroups (4), once unpacked (two fields), once packed.
        let unpacked = [varint_field(4, 1000), varint_field(4, 2000)].concat();
        let mut packed_values = Vec::new();
        varint(1000, &mut packed_values);
        varint(2000, &mut packed_values);
        let packed = bytes_field(4, &packed_values);
        for groups in [unpacked, packed] {
            let spec = [spec.clone(), bytes_field(14, &groups)].concat();
            let pod: Pod = decode(&bytes_field(2, &spec), schema::POD).unwrap();
            let spec = pod.spec.unwrap();
            assert_eq!(spec.priority, Some(-5));
            assert_eq!(
                spec.security_context.unwrap().supplemental_groups,
                Some(vec![1000, 2000])
            );
        }
    }

    #[test]
    fn broken_input_is_an_error_never_a_panic() {
        assert!(list(b"{\"kind\":\"PodList\"}").is_err());
        assert!(list(b"k8s\0").is_err(), "no object");
        let body = fixture("pods.pb");
        let listed = list(&body).unwrap();
        let item = listed.items[0];
        // Every cut of an item, and bytes changed through it: errors or other pods, no panic.
        for end in (0..item.len()).step_by(61) {
            let _ = decode::<Pod>(&item[..end], schema::POD);
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..300 {
            let mut changed = item.to_vec();
            for _ in 0..4 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed % changed.len() as u64) as usize;
                changed[at] = (seed >> 32) as u8;
            }
            let _ = decode::<Pod>(&changed, schema::POD);
        }
        assert!(list(&body[..body.len() - 3]).is_err(), "a cut list");
    }

    #[test]
    fn an_error_status_decodes_as_its_json_does() {
        // Status: status (2), message (3), reason (4), details (5: kind 3, causes 4 with
        // message 2, retryAfterSeconds 5), code (6); in runtime.Unknown's raw (2).
        let cause = bytes_field(2, b"too many requests");
        let details = [
            bytes_field(3, b"pods"),
            bytes_field(4, &cause),
            varint_field(5, 3),
        ]
        .concat();
        let status = [
            bytes_field(1, b""),
            bytes_field(2, b"Failure"),
            bytes_field(3, b"slow down"),
            bytes_field(4, b"TooManyRequests"),
            bytes_field(5, &details),
            varint_field(6, 429),
        ]
        .concat();
        let body = [MAGIC.to_vec(), bytes_field(2, &status)].concat();
        let from_protobuf: kube::core::Status =
            decode(object(&body).unwrap(), schema::STATUS).unwrap();
        let from_json: kube::core::Status = serde_json::from_str(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"slow down",
               "reason":"TooManyRequests","details":{"kind":"pods","causes":[{"message":"too many requests"}],
               "retryAfterSeconds":3},"code":429}"#,
        )
        .unwrap();
        assert_eq!(from_protobuf, from_json);
        assert_eq!(from_protobuf.details.unwrap().retry_after_seconds, 3);
    }

    #[test]
    fn time_text_is_the_json_form() {
        assert_eq!(
            time_text(1_765_008_000, 123_456_789, false).unwrap(),
            "2025-12-06T08:00:00Z"
        );
        assert_eq!(
            time_text(1_765_008_000, 123_456_789, true).unwrap(),
            "2025-12-06T08:00:00.123456Z"
        );
        assert_eq!(
            time_text(1_765_008_000, 0, true).unwrap(),
            "2025-12-06T08:00:00.000000Z"
        );
    }
}
