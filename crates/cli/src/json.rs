//! Minimal JSON text building: escaped strings, f32 bit patterns, lists. Output is stable
//! (fields in the order written) so golden files diff cleanly.

pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// "0x3f800000" for 1.0.
pub fn bits(v: f32) -> String {
    format!("\"0x{:08x}\"", v.to_bits())
}

pub fn list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    let parts: Vec<String> = items.iter().map(f).collect();
    format!("[{}]", parts.join(", "))
}

/// A finite f64 as JSON (non-finite values become null).
pub fn number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".to_string()
    }
}

/// {"k": v, ...} from already-encoded values, one field per line when `pretty`.
pub fn object(fields: &[(&str, String)], pretty: bool) -> String {
    let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{}: {}", string(k), v)).collect();
    if pretty {
        format!("{{\n  {}\n}}", parts.join(",\n  "))
    } else {
        format!("{{{}}}", parts.join(", "))
    }
}
