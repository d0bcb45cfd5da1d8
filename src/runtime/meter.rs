//! The meter (docs/runtime.md): lengths counted as JavaScript counts them,
//! and tokens at a quarter token per character. The engine, the plan and the
//! engine's own tools all count with it, so it sits below each of them.

/// Meter tokens: a quarter token per character, rounded up.
pub(crate) fn tokens_of_len(chars: usize) -> u32 {
    u32::try_from(chars.div_ceil(4)).unwrap_or(u32::MAX)
}

/// The length the meter counts, in UTF-16 code units: what JavaScript's
/// `string.length` gives, so figures agree with runtimes that measure in
/// JavaScript (Aiden's meter, the fixture READMEs). It differs from a count of
/// Unicode scalar values only for characters outside the Basic Multilingual
/// Plane (emoji), which count two.
pub fn meter_len(text: &str) -> usize {
    // Every character but continuation bytes counts one; four-byte ones
    // (outside the BMP) count two. Counted in `u8` over chunks of 127 bytes
    // (at most 2 per byte, so no overflow) so that the compiler vectorizes
    // the loop 16 bytes at a time: summing into `usize` per byte took ~1 ns
    // a byte, a quarter of a 100-tool first-turn plan (`plan/100`).
    let mut n = 0;
    for chunk in text.as_bytes().chunks(127) {
        let mut c: u8 = 0;
        for &b in chunk {
            c += u8::from(b & 0xC0 != 0x80) + u8::from(b >= 0xF0);
        }
        n += usize::from(c);
    }
    n
}

/// The meter length of a tool's compact definition `{name, description,
/// parameters}`, as [`Tool::declaration`](crate::Tool::declaration) would
/// serialize it, counted as it is written instead of built and copied.
pub(crate) fn declaration_len(tool: &crate::Tool) -> usize {
    #[derive(serde::Serialize)]
    struct Declaration<'a> {
        description: &'a str,
        name: &'a str,
        parameters: &'a serde_json::Value,
    }
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf
                .iter()
                .map(|&b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0))
                .sum::<usize>();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let decl = Declaration {
        description: &tool.description,
        name: &tool.name,
        parameters: &tool.parameters,
    };
    match serde_json::to_writer(&mut count, &decl) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Registry;

    #[test]
    fn meter_counts_utf16_units_and_declarations_as_serialized() {
        assert_eq!(meter_len("abc"), 3);
        assert_eq!(meter_len("搜索"), 2);
        assert_eq!(meter_len("é😀"), 3);
        let reg = Registry::from_json(
            r#"[{"name": "t", "description": "引号 \" and 😀", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}]"#,
        )
        .unwrap();
        let t = &reg.tools()[0];
        let text = serde_json::to_string(&t.declaration()).unwrap();
        assert_eq!(declaration_len(t), meter_len(&text));
        assert_eq!(tokens_of_len(5), 2);
        assert_eq!(tokens_of_len(8), 2);
        assert_eq!(tokens_of_len(0), 0);
    }
}
