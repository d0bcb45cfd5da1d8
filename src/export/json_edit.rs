//! Edits of a JSON settings file that keep everything they do not change:
//! comments (`//`, `/* */`), trailing commas, key order, indentation and
//! the text of every other key are left byte for byte. The file is scanned
//! once per edit for the spans of its objects' members; a value the export
//! owns is replaced in its span, and a missing key is added after its
//! object's last member, indented as its siblings are.

use serde_json::Value;

use super::Edit;

/// A value's span, and an object's members.
#[derive(Debug)]
struct Node {
    start: usize,
    end: usize,
    /// For an object: its members in order; none otherwise.
    members: Option<Vec<Member>>,
}

#[derive(Debug)]
struct Member {
    key: String,
    key_start: usize,
    value: Node,
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn error(&self, what: &str) -> String {
        let line = self.text[..self.at.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        format!("line {line}: {what}")
    }

    /// Skips whitespace and comments.
    fn skip(&mut self) -> Result<(), String> {
        loop {
            while self.at < self.bytes.len() && self.bytes[self.at].is_ascii_whitespace() {
                self.at += 1;
            }
            if self.text[self.at..].starts_with("//") {
                while self.at < self.bytes.len() && self.bytes[self.at] != b'\n' {
                    self.at += 1;
                }
            } else if self.text[self.at..].starts_with("/*") {
                match self.text[self.at + 2..].find("*/") {
                    Some(i) => self.at += i + 4,
                    None => return Err(self.error("a `/*` comment is not closed")),
                }
            } else if self.text[self.at..].starts_with('\u{feff}') {
                self.at += '\u{feff}'.len_utf8();
            } else {
                return Ok(());
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn string(&mut self) -> Result<String, String> {
        let start = self.at;
        self.at += 1;
        while let Some(b) = self.peek() {
            match b {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return serde_json::from_str(&self.text[start..self.at])
                        .map_err(|e| self.error(&format!("bad string: {e}")));
                }
                _ => self.at += 1,
            }
        }
        Err(self.error("a string is not closed"))
    }

    fn value(&mut self, depth: usize) -> Result<Node, String> {
        if depth > 128 {
            return Err(self.error("nested too deeply"));
        }
        self.skip()?;
        let start = self.at;
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut members = Vec::new();
                loop {
                    self.skip()?;
                    match self.peek() {
                        Some(b'}') => {
                            self.at += 1;
                            break;
                        }
                        Some(b'"') => {}
                        _ => return Err(self.error("expected a key or `}`")),
                    }
                    let key_start = self.at;
                    let key = self.string()?;
                    self.skip()?;
                    if self.peek() != Some(b':') {
                        return Err(self.error("expected `:` after a key"));
                    }
                    self.at += 1;
                    let value = self.value(depth + 1)?;
                    members.push(Member {
                        key,
                        key_start,
                        value,
                    });
                    self.skip()?;
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {}
                        _ => return Err(self.error("expected `,` or `}`")),
                    }
                }
                Ok(Node {
                    start,
                    end: self.at,
                    members: Some(members),
                })
            }
            Some(b'[') => {
                self.at += 1;
                loop {
                    self.skip()?;
                    if self.peek() == Some(b']') {
                        self.at += 1;
                        break;
                    }
                    self.value(depth + 1)?;
                    self.skip()?;
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b']') => {}
                        _ => return Err(self.error("expected `,` or `]`")),
                    }
                }
                Ok(Node {
                    start,
                    end: self.at,
                    members: None,
                })
            }
            Some(b'"') => {
                self.string()?;
                Ok(Node {
                    start,
                    end: self.at,
                    members: None,
                })
            }
            Some(_) => {
                while let Some(b) = self.peek() {
                    if b.is_ascii_alphanumeric() || b"+-.".contains(&b) {
                        self.at += 1;
                    } else {
                        break;
                    }
                }
                if self.at == start {
                    return Err(self.error("expected a value"));
                }
                Ok(Node {
                    start,
                    end: self.at,
                    members: None,
                })
            }
            None => Err(self.error("expected a value, found the end of the file")),
        }
    }
}

fn parse(text: &str) -> Result<Node, String> {
    let mut s = Scanner {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    let root = s.value(0)?;
    s.skip()?;
    if s.at != text.len() {
        return Err(s.error("text after the document"));
    }
    if root.members.is_none() {
        return Err("the settings file is not a JSON object".into());
    }
    Ok(root)
}

/// The value of a span, its comments and trailing commas taken out.
pub fn plain(text: &str) -> Result<Value, String> {
    let mut out = String::with_capacity(text.len());
    let mut s = Scanner {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    while s.at < text.len() {
        let before = s.at;
        s.skip()?;
        if s.at > before {
            out.push(' ');
            continue;
        }
        match s.peek() {
            Some(b'"') => {
                let start = s.at;
                s.string()?;
                out += &text[start..s.at];
            }
            Some(b',') => {
                // A trailing comma: the next token closes.
                let mut look = Scanner {
                    text,
                    bytes: text.as_bytes(),
                    at: s.at + 1,
                };
                look.skip()?;
                if !matches!(look.peek(), Some(b'}' | b']')) {
                    out.push(',');
                }
                s.at += 1;
            }
            Some(_) => {
                let c = text[s.at..].chars().next().unwrap_or(' ');
                out.push(c);
                s.at += c.len_utf8();
            }
            None => break,
        }
    }
    serde_json::from_str(&out).map_err(|e| format!("not JSON: {e}"))
}

/// The indentation of the line `at` is on.
fn indent_at(text: &str, at: usize) -> String {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

/// `value`, pretty, each line after the first at `indent`.
fn render(value: &Value, indent: &str, unit: &str) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    serde::Serialize::serialize(value, &mut ser).expect("a JSON value serializes");
    let text = String::from_utf8(buf).expect("serde_json writes UTF-8");
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l.to_string()
            } else {
                format!("{indent}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The value that puts `value` at `rest` below an object.
fn nested(rest: &[String], value: Value) -> Value {
    rest.iter().rev().fold(value, |v, k| {
        let mut m = serde_json::Map::new();
        m.insert(k.clone(), v);
        Value::Object(m)
    })
}

/// The file's indentation unit: its first member's indentation, else two
/// spaces.
fn unit(text: &str, root: &Node) -> String {
    root.members
        .as_ref()
        .and_then(|m| m.first())
        .map(|m| indent_at(text, m.key_start))
        .filter(|i| !i.is_empty())
        .unwrap_or_else(|| "  ".into())
}

/// `value` at `path`, in `text`.
fn set(text: &str, path: &[String], value: Value) -> Result<String, String> {
    let root = parse(text)?;
    let unit = unit(text, &root);
    let mut node = &root;
    for (i, key) in path.iter().enumerate() {
        let members = node.members.as_ref().expect("walked objects only");
        let found = members.iter().rev().find(|m| &m.key == key);
        match found {
            Some(m) if i + 1 == path.len() || m.value.members.is_none() => {
                let indent = indent_at(text, m.key_start);
                let new = render(&nested(&path[i + 1..], value), &indent, &unit);
                return Ok(format!(
                    "{}{new}{}",
                    &text[..m.value.start],
                    &text[m.value.end..]
                ));
            }
            Some(m) => node = &m.value,
            None => {
                let new_value = nested(&path[i + 1..], value);
                return Ok(insert(text, node, key, &new_value, &unit));
            }
        }
    }
    Err("an empty key path".into())
}

/// `"key": value` added as the last member of `obj`.
fn insert(text: &str, obj: &Node, key: &str, value: &Value, unit: &str) -> String {
    let members = obj.members.as_ref().expect("an object");
    let key_json = Value::String(key.to_string()).to_string();
    match members.last() {
        Some(last) => {
            let indent = indent_at(text, last.key_start);
            let new = render(value, &indent, unit);
            format!(
                "{},\n{indent}{key_json}: {new}{}",
                &text[..last.value.end],
                &text[last.value.end..]
            )
        }
        None => {
            let outer = indent_at(text, obj.start);
            let indent = format!("{outer}{unit}");
            let new = render(value, &indent, unit);
            let inside = &text[obj.start + 1..obj.end - 1];
            let close = if inside.trim().is_empty() {
                format!("\n{outer}")
            } else {
                format!("{}\n{outer}", inside.trim_end())
            };
            format!(
                "{}{{\n{indent}{key_json}: {new}{close}}}{}",
                &text[..obj.start],
                &text[obj.end..]
            )
        }
    }
}

/// The array at `path`, if the file has one there.
fn get(text: &str, path: &[String]) -> Result<Option<Value>, String> {
    let root = parse(text)?;
    let mut node = &root;
    for key in path {
        let Some(members) = &node.members else {
            return Ok(None);
        };
        match members.iter().rev().find(|m| &m.key == key) {
            Some(m) => node = &m.value,
            None => return Ok(None),
        }
    }
    plain(&text[node.start..node.end]).map(Some)
}

/// `edits` applied to `existing` (empty: a new file).
pub fn apply(existing: &str, edits: &[Edit]) -> Result<String, String> {
    let mut text = if existing.trim().is_empty() {
        "{}\n".to_string()
    } else {
        existing.to_string()
    };
    parse(&text)?;
    for edit in edits {
        text = match edit {
            Edit::Set(path, value) => set(&text, path, value.clone())?,
            Edit::List { path, items, owned } => {
                let mut kept: Vec<Value> = match get(&text, path)? {
                    Some(Value::Array(a)) => a
                        .into_iter()
                        .filter(|v| !v.as_str().is_some_and(|s| owned.claims(s)))
                        .collect(),
                    _ => Vec::new(),
                };
                kept.extend(items.iter().cloned().map(Value::String));
                set(&text, path, Value::Array(kept))?
            }
            Edit::Entries {
                path,
                entries,
                owned,
            } => {
                let mut kept = match get(&text, path)? {
                    Some(Value::Object(m)) => {
                        m.into_iter().filter(|(k, _)| !owned.claims(k)).collect()
                    }
                    _ => serde_json::Map::new(),
                };
                kept.extend(entries.clone());
                set(&text, path, Value::Object(kept))?
            }
        };
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_new_file_is_pretty() {
        let out = apply("", &[Edit::Set(path(&["a", "b"]), json!([1, 2]))]).unwrap();
        assert_eq!(
            out,
            "{\n  \"a\": {\n    \"b\": [\n      1,\n      2\n    ]\n  }\n}\n"
        );
    }

    #[test]
    fn comments_and_foreign_keys_stay() {
        let text =
            "{\n  // the theme\n  \"theme\": \"dark\", /* kept */\n  \"a\": {\"x\": 1,},\n}\n";
        let out = apply(text, &[Edit::Set(path(&["a", "x"]), json!(2))]).unwrap();
        assert_eq!(out, text.replace("\"x\": 1", "\"x\": 2"));
        let out = apply(text, &[Edit::Set(path(&["b"]), json!(true))]).unwrap();
        assert!(out.contains("// the theme") && out.contains("/* kept */"));
        assert_eq!(
            plain(&out).unwrap(),
            json!({"theme": "dark", "a": {"x": 1}, "b": true})
        );
    }

    #[test]
    fn lists_keep_what_they_do_not_own() {
        let text = r#"{"p": {"deny": ["Bash(rm *)", "mcp__fs__write", "mcp__fsx__a"]}}"#;
        let edit = Edit::List {
            path: path(&["p", "deny"]),
            items: vec!["mcp__fs__edit".into()],
            owned: super::super::Owned {
                prefixes: vec!["mcp__fs".into()],
                sep: "__",
            },
        };
        let out = apply(text, &[edit]).unwrap();
        assert_eq!(
            plain(&out).unwrap(),
            json!({"p": {"deny": ["Bash(rm *)", "mcp__fsx__a", "mcp__fs__edit"]}})
        );
    }

    #[test]
    fn bad_input_says_where() {
        let e = apply("{\n\"a\": }", &[Edit::Set(path(&["a"]), json!(1))]).unwrap_err();
        assert!(e.starts_with("line 2"), "{e}");
        assert!(apply("[1]", &[]).is_err());
    }
}
