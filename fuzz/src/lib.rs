//! What the fuzz targets share: the case generator of the differential run,
//! driven by the fuzzer's bytes; random registries and skill lists; and the
//! invariants a plan must keep whatever happened before it.

#[path = "../../examples/differential/cases.rs"]
pub mod cases;
pub mod invariants;
pub mod world;

use arbitrary::Unstructured;

/// The fuzzer's input as a [`cases::Dice`]: every choice reads a few bytes,
/// and once they run out every choice is the first, so any input is a case.
pub struct Bytes<'a>(pub Unstructured<'a>);

impl Bytes<'_> {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl cases::Dice for Bytes<'_> {
    fn below(&mut self, n: usize) -> usize {
        self.0.int_in_range(0..=n.saturating_sub(1)).unwrap_or(0)
    }
}
