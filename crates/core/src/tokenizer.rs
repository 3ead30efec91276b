//! Byte-level tokenizer v1: ids 0..=255 are bytes, 256 is BOS, 257 is EOS. Models must have
//! a vocabulary of at least 258; ids above 257 decode to nothing.

pub const TOKENIZER_VERSION: u32 = 1;
pub const BOS: u32 = 256;
pub const EOS: u32 = 257;
pub const MIN_VOCAB: u32 = 258;

/// Appends BOS then one token per byte of `text`.
pub fn encode(text: &[u8], out: &mut alloc::vec::Vec<u32>) {
    out.push(BOS);
    out.extend(text.iter().map(|b| *b as u32));
}

/// The byte a token stands for, if any.
pub fn decode(token: u32) -> Option<u8> {
    if token < 256 {
        Some(token as u8)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn round_trips_bytes() {
        let mut ids = Vec::new();
        encode("hé".as_bytes(), &mut ids);
        assert_eq!(ids, [256, 104, 195, 169]);
        let bytes: Vec<u8> = ids.iter().filter_map(|t| decode(*t)).collect();
        assert_eq!(bytes, "hé".as_bytes());
        assert_eq!(decode(EOS), None);
    }
}
