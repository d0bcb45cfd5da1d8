//! Reading the files the engine is given: policies, registries, skill lists,
//! scenarios and expectation files.
//!
//! Every read goes through [`read`] (or [`read_from`] for standard input), so
//! that one size cap holds everywhere: a path such as `/dev/zero` or a runaway
//! generated registry is refused with an error instead of filling memory.
//! Every decoder skips a leading UTF-8 byte-order mark with [`strip_bom`]
//! (Windows editors write one), so that positions count from the first
//! character a user sees.

use std::io::{self, Read};
use std::path::Path;

/// The most bytes any one input may hold: 64 MiB, far beyond any real policy
/// or registry (the largest fixture registry is under 1 MiB).
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

const BOM: char = '\u{feff}';

/// Reads a whole file, refusing one larger than [`MAX_INPUT_BYTES`].
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    // A regular file says its size up front; devices and pipes do not, so the
    // read itself is capped as well.
    if file.metadata().is_ok_and(|m| m.len() > MAX_INPUT_BYTES) {
        return Err(too_large());
    }
    read_from(file)
}

/// Reads a stream to its end, refusing more than [`MAX_INPUT_BYTES`].
pub fn read_from(reader: impl Read) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    reader.take(MAX_INPUT_BYTES + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_large());
    }
    Ok(buf)
}

fn too_large() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "it is larger than {} MiB, the most an input file may hold",
            MAX_INPUT_BYTES / (1024 * 1024)
        ),
    )
}

/// The text without a leading byte-order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix(BOM).unwrap_or(text)
}

/// The bytes without a leading UTF-8 byte-order mark.
pub fn strip_bom_bytes(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes)
}

/// A leading byte-order mark (or nothing) and the text after it, for the
/// formatter, which writes the mark back where the file had one.
pub fn split_bom(text: &str) -> (&str, &str) {
    let body = strip_bom(text);
    (&text[..text.len() - body.len()], body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_past_the_cap_is_refused() {
        let endless = io::repeat(0);
        let e = read_from(endless).unwrap_err();
        assert!(e.to_string().contains("64 MiB"), "{e}");
        assert_eq!(read_from(&b"abc"[..]).unwrap(), b"abc");
    }

    #[test]
    fn only_a_leading_mark_is_skipped() {
        assert_eq!(strip_bom("\u{feff}Defer(a)"), "Defer(a)");
        assert_eq!(strip_bom("Defer(\u{feff})"), "Defer(\u{feff})");
        assert_eq!(split_bom("\u{feff}x"), ("\u{feff}", "x"));
        assert_eq!(strip_bom_bytes(b"\xef\xbb\xbfx"), b"x");
    }
}
