//! The parameter kinds: each checks its value (reporting the value it got) and states its schema.

use super::*;

/// Reads the value as JSON and checks it, so every kind reports the value it got.
pub(super) fn checked<'de, D: Deserializer<'de>, T>(
    d: D,
    check: impl FnOnce(Value) -> Result<T, String>,
) -> Result<T, D::Error> {
    let v = Value::deserialize(d)?;
    check(v).map_err(de::Error::custom)
}

/// The value as an integer, when it is one (an integral float like `2.0` counts).
pub(super) fn integer(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite() && f.fract() == 0.0)
                    .map(|f| f as i128)
            }),
        _ => None,
    }
}

macro_rules! kind {
    ($ty:ident, $schema:tt) => {
        impl JsonSchema for $ty {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                stringify!($ty).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }
    };
}

/// Any string (empty too).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Text(pub String);
kind!(Text, {"type": "string"});

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked(d, |v| match v {
            Value::String(s) => Ok(Text(s)),
            other => Err(format!("must be a string, got {}", quote(&other))),
        })
    }
}

/// A string that is not empty (a search query: blanks are a valid query).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Query(pub String);
kind!(Query, {"type": "string"});

impl<'de> Deserialize<'de> for Query {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Text(s) = Text::deserialize(d)?;
        if s.is_empty() {
            return Err(de::Error::custom("must not be empty"));
        }
        Ok(Query(s))
    }
}

/// A string with some non-blank content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct NonBlank(pub String);
kind!(NonBlank, {"type": "string"});

impl<'de> Deserialize<'de> for NonBlank {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Text(s) = Text::deserialize(d)?;
        if s.trim().is_empty() {
            return Err(de::Error::custom("must not be empty"));
        }
        Ok(NonBlank(s))
    }
}

/// `true` or `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Flag(pub bool);
kind!(Flag, {"type": "boolean"});

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked(d, |v| match v {
            Value::Bool(b) => Ok(Flag(b)),
            other => Err(format!("must be true or false, got {}", quote(&other))),
        })
    }
}

/// An integer ≥ 1 (larger than `usize` saturates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct PositiveInt(pub usize);
kind!(PositiveInt, {"type": "integer"});

impl<'de> Deserialize<'de> for PositiveInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked(d, |v| match integer(&v) {
            Some(n) if n >= 1 => Ok(PositiveInt(usize::try_from(n).unwrap_or(usize::MAX))),
            _ => Err(format!("must be a positive integer, got {}", quote(&v))),
        })
    }
}

/// An integer ≥ 0 (larger than `usize` saturates).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct NonNegativeInt(pub usize);
kind!(NonNegativeInt, {"type": "integer"});

impl<'de> Deserialize<'de> for NonNegativeInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked(d, |v| match integer(&v) {
            Some(n) if n >= 0 => Ok(NonNegativeInt(usize::try_from(n).unwrap_or(usize::MAX))),
            _ => Err(format!("must be a non-negative integer, got {}", quote(&v))),
        })
    }
}

/// A 1-based line number, or a negative one counting from the end (-1 = last line); never 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct LineIndex(pub i64);
kind!(LineIndex, {"type": "integer"});

impl<'de> Deserialize<'de> for LineIndex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked(d, |v| {
            match integer(&v).map(i64::try_from) {
            Some(Ok(0)) => Err("must not be 0: lines are 1-based, and negative values count from the end (-1 = last line)".into()),
            Some(Ok(n)) => Ok(LineIndex(n)),
            _ => Err(format!("must be an integer, got {}", quote(&v))),
        }
        })
    }
}

/// One of the history item roles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct RoleName(pub String);

impl JsonSchema for RoleName {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "RoleName".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "enum": ROLE_NAMES})
    }
}

impl<'de> Deserialize<'de> for RoleName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked(d, |v| match &v {
            Value::String(s) if ROLE_NAMES.contains(&s.as_str()) => Ok(RoleName(s.clone())),
            _ => Err(format!(
                "must be one of {}, got {}",
                ROLE_NAMES.map(|n| format!("\"{n}\"")).join(", "),
                quote(&v)
            )),
        })
    }
}

/// A list of non-blank paths.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct PathList(pub Vec<String>);
kind!(PathList, {"type": "array", "items": {"type": "string"}});

impl<'de> Deserialize<'de> for PathList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked(d, |v| {
            let Value::Array(items) = v else {
                return Err(format!("must be an array of paths, got {}", quote(&v)));
            };
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                match item {
                    Value::String(s) if !s.trim().is_empty() => out.push(s),
                    Value::String(_) => return Err(format!("[{i}] must not be empty")),
                    other => {
                        return Err(format!(
                            "[{i}] must be a string path, got {}",
                            quote(&other)
                        ))
                    }
                }
            }
            Ok(PathList(out))
        })
    }
}
