//! The borrowed shapes a session line is read into (`Raw*`: in full; `Skim*`: without the
//! messages' texts), before [`super::decode`] converts them into [`super::types`]' values. Only
//! serde's view of Pi's JSON lives here: which fields exist, how content blocks and strings are
//! read or skipped (a skipped value is still checked as the full reading would check it).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

pub(super) type Str<'a> = Cow<'a, str>;

/// One line; `M` is how its `message` is read: [`RawMessage`] in full, or [`SkimMessage`] (see
/// [`skim_entry_of_line`]).
#[derive(Deserialize)]
#[serde(bound(deserialize = "M: Deserialize<'de>"))]
pub(super) struct RawLine<'a, M = RawMessage<'a>> {
    #[serde(rename = "type", borrow)]
    pub(super) kind: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) id: Option<Str<'a>>,
    #[serde(rename = "parentId", borrow)]
    pub(super) parent_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) timestamp: Option<Str<'a>>,
    // header
    pub(super) version: Option<f64>,
    #[serde(borrow)]
    pub(super) cwd: Option<Str<'a>>,
    #[serde(rename = "parentSession", borrow)]
    pub(super) parent_session: Option<Str<'a>>,
    // message
    pub(super) message: Option<M>,
    // model / thinking changes
    #[serde(borrow)]
    pub(super) provider: Option<Str<'a>>,
    #[serde(rename = "modelId", borrow)]
    pub(super) model_id: Option<Str<'a>>,
    #[serde(rename = "thinkingLevel", borrow)]
    pub(super) thinking_level: Option<Str<'a>>,
    // compaction / branch summary
    #[serde(borrow)]
    pub(super) summary: Option<Str<'a>>,
    #[serde(rename = "firstKeptEntryId", borrow)]
    pub(super) first_kept_entry_id: Option<Str<'a>>,
    #[serde(rename = "tokensBefore")]
    pub(super) tokens_before: Option<f64>,
    pub(super) details: Option<Value>,
    #[serde(rename = "fromHook")]
    pub(super) from_hook: Option<bool>,
    #[serde(rename = "fromId", borrow)]
    pub(super) from_id: Option<Str<'a>>,
    // custom / custom_message
    #[serde(rename = "customType", borrow)]
    pub(super) custom_type: Option<Str<'a>>,
    pub(super) data: Option<Value>,
    #[serde(borrow)]
    pub(super) content: Option<RawContent<'a>>,
    pub(super) display: Option<bool>,
    #[serde(rename = "systemMessage", borrow)]
    pub(super) system_message: Option<RawMessage<'a>>,
    #[serde(borrow)]
    pub(super) replacement: Option<RawReplacement<'a>>,
    // label / context_edit / session_info
    #[serde(rename = "targetId", borrow)]
    pub(super) target_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) label: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) name: Option<Str<'a>>,
}

impl<'a, M> RawLine<'a, M> {
    /// A line with none of its fields (what the fast path of the skim fills in).
    pub(super) fn empty() -> Self {
        RawLine {
            kind: None,
            id: None,
            parent_id: None,
            timestamp: None,
            version: None,
            cwd: None,
            parent_session: None,
            message: None,
            provider: None,
            model_id: None,
            thinking_level: None,
            summary: None,
            first_kept_entry_id: None,
            tokens_before: None,
            details: None,
            from_hook: None,
            from_id: None,
            custom_type: None,
            data: None,
            content: None,
            display: None,
            system_message: None,
            replacement: None,
            target_id: None,
            label: None,
            name: None,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct RawMessage<'a> {
    #[serde(borrow)]
    pub(super) role: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) content: Option<RawContent<'a>>,
    #[serde(rename = "toolName", borrow)]
    pub(super) tool_name: Option<Str<'a>>,
    #[serde(rename = "toolCallId", borrow)]
    pub(super) tool_call_id: Option<Str<'a>>,
    #[serde(rename = "isError")]
    pub(super) is_error: Option<bool>,
    pub(super) usage: Option<RawUsage>,
    #[serde(rename = "stopReason", borrow)]
    pub(super) stop_reason: Option<Str<'a>>,
    #[serde(rename = "customType", borrow)]
    pub(super) custom_type: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) provider: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) model: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) command: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) output: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) summary: Option<Str<'a>>,
    pub(super) sections: Option<Value>,
    #[serde(rename = "toolsAdded")]
    pub(super) tools_added: Option<Vec<Value>>,
    #[serde(rename = "toolsRemoved")]
    pub(super) tools_removed: Option<Vec<Value>>,
    /// Any JSON value: only a number is read (a line is never refused for its timestamp).
    pub(super) timestamp: Option<Value>,
}

/// A message read for its facts only (role, tool, error flag, usage, stop reason): its content
/// and texts are checked for their JSON shape (so a line is kept or refused exactly as the full
/// reading does) but neither copied nor measured.
#[derive(Deserialize)]
#[allow(dead_code)] // the shapes are read to be checked, not kept
pub(super) struct SkimMessage<'a> {
    #[serde(borrow)]
    pub(super) role: Option<Str<'a>>,
    pub(super) content: Option<SkimContent>,
    #[serde(rename = "toolName", borrow)]
    pub(super) tool_name: Option<Str<'a>>,
    #[serde(rename = "toolCallId", borrow)]
    pub(super) tool_call_id: Option<Str<'a>>,
    #[serde(rename = "isError")]
    pub(super) is_error: Option<bool>,
    pub(super) usage: Option<RawUsage>,
    #[serde(rename = "stopReason", borrow)]
    pub(super) stop_reason: Option<Str<'a>>,
    #[serde(rename = "customType", borrow)]
    pub(super) custom_type: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) provider: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) model: Option<Str<'a>>,
    pub(super) command: Option<SkimStr>,
    pub(super) output: Option<SkimStr>,
    pub(super) summary: Option<SkimStr>,
    pub(super) sections: Option<SkimAny>,
    #[serde(rename = "toolsAdded")]
    pub(super) tools_added: Option<Vec<SkimAny>>,
    #[serde(rename = "toolsRemoved")]
    pub(super) tools_removed: Option<Vec<SkimAny>>,
}

/// Any JSON value, checked as a `serde_json::Value` would be (numbers in range, strings
/// well-formed) and dropped. (`IgnoredAny` does not check numbers, so a line the full reading
/// refuses could be kept.)
pub(super) struct SkimAny;

impl<'de> Deserialize<'de> for SkimAny {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SkimAny;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(SkimAny)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(SkimAny)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(SkimAny)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(SkimAny)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(SkimAny)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(SkimAny)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(SkimAny)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                SkimAny::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<SkimAny>()?.is_some() {}
                Ok(SkimAny)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<SkimAny, SkimAny>()?.is_some() {}
                Ok(SkimAny)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A JSON string, checked and dropped.
pub(super) struct SkimStr;

impl<'de> Deserialize<'de> for SkimStr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = SkimStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(SkimStr)
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// [`RawBlock`]'s shape, nothing kept.
#[derive(Deserialize)]
pub(super) struct SkimBlock {
    #[serde(rename = "type")]
    pub(super) _kind: Option<SkimStr>,
    #[serde(rename = "text")]
    pub(super) _text: Option<SkimStr>,
    #[serde(rename = "name")]
    pub(super) _name: Option<SkimStr>,
    #[serde(rename = "arguments")]
    pub(super) _arguments: Option<SkimAny>,
    #[serde(rename = "thinking")]
    pub(super) _thinking: Option<SkimStr>,
}

/// [`RawContent`]'s shape (a string, an array of blocks, or null), nothing kept.
pub(super) struct SkimContent;

impl<'de> Deserialize<'de> for SkimContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SkimContent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(SkimContent)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(SkimContent)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(SkimContent)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<SkimBlock>()?.is_some() {}
                Ok(SkimContent)
            }
        }
        deserializer.deserialize_any(V)
    }
}

#[derive(Deserialize)]
pub(super) struct RawReplacement<'a> {
    #[serde(borrow)]
    pub(super) content: Option<RawContent<'a>>,
}

#[derive(Deserialize)]
pub(super) struct RawUsage {
    pub(super) input: Option<f64>,
    pub(super) output: Option<f64>,
    #[serde(rename = "cacheRead")]
    pub(super) cache_read: Option<f64>,
    #[serde(rename = "cacheWrite")]
    pub(super) cache_write: Option<f64>,
    #[serde(rename = "totalTokens")]
    pub(super) total_tokens: Option<f64>,
    #[serde(default, deserialize_with = "lenient_cost")]
    pub(super) cost: Option<RawCost>,
}

/// Pi's cost of a request (`usage.cost`): only its total is read.
#[derive(Deserialize)]
pub(super) struct RawCost {
    pub(super) total: Option<f64>,
}

/// `usage.cost` as an object with a numeric (or null) `total`; any other shape is no cost, never
/// a malformed line (the cost is read only for the ledger).
fn lenient_cost<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<RawCost>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Shape {
        Cost(RawCost),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Option::<Shape>::deserialize(d)? {
        Some(Shape::Cost(c)) => Some(c),
        _ => None,
    })
}

#[derive(Deserialize)]
pub(super) struct RawBlock<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) kind: Option<Str<'a>>,
    pub(super) text: Option<JsonText>,
    #[serde(borrow)]
    pub(super) name: Option<Str<'a>>,
    pub(super) arguments: Option<Value>,
    pub(super) thinking: Option<JsonText>,
    #[serde(borrow)]
    pub(super) id: Option<Str<'a>>,
}

/// A JSON string decoded in one pass: serde_json finds its end and decodes its escapes in the
/// same scan, and the text is copied once into a `String` of exactly its size.
pub(super) struct JsonText(pub(super) String);

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl Visitor<'_> for TextVisitor {
            type Value = JsonText;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(JsonText(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(JsonText(v))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

/// Message content: a plain string or an array of content blocks.
pub(super) enum RawContent<'a> {
    Text(Str<'a>),
    Blocks(Vec<RawBlock<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for RawContent<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor<'a>(PhantomData<&'a ()>);

        impl<'de: 'a, 'a> Visitor<'de> for ContentVisitor<'a> {
            type Value = RawContent<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(RawContent::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawContent::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(RawContent::Text(Cow::Owned(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RawContent::Blocks(Vec::new()))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RawContent::Blocks(Vec::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(block) = seq.next_element::<RawBlock<'a>>()? {
                    blocks.push(block);
                }
                Ok(RawContent::Blocks(blocks))
            }
        }

        deserializer.deserialize_any(ContentVisitor(PhantomData))
    }
}
