//! ABI behaviour through `Runtime` (the exports are one-line wrappers around it).

use super::*;
use tinyrustlm_core::selftest::TINY_MODEL;

fn put(rt: &mut Runtime, bytes: &[u8]) -> u32 {
    let addr = rt.alloc(bytes.len() as u32);
    rt.windows.get_mut(addr, bytes.len() as u32).unwrap().copy_from_slice(bytes);
    addr
}

fn read_u64(rt: &mut Runtime, addr: u32) -> u64 {
    let b = rt.windows.get_mut(addr, 8).unwrap();
    le_u64(b, 0)
}

fn greedy_config(context: u32) -> [u8; 40] {
    let mut c = [0u8; 40];
    c[24..28].copy_from_slice(&1.0f32.to_le_bytes()); // top_p
    c[28..32].copy_from_slice(&4.0f32.to_le_bytes()); // repetition penalty (as the self-test)
    c[32..36].copy_from_slice(&context.to_le_bytes());
    c
}

fn load_tiny(rt: &mut Runtime) -> u64 {
    let model = put(rt, TINY_MODEL);
    let out = rt.alloc(8);
    assert_eq!(rt.model_load(model, TINY_MODEL.len() as u32, out), Ok(()));
    read_u64(rt, out)
}

/// A runtime with the tiny model, a greedy session, and BOS + "tiny" prefilled: (runtime,
/// session handle, a 24-byte output window, the prompt's token window).
fn tiny_session_prefilled() -> (Runtime, u64, u32, u32) {
    let mut rt = Runtime::default();
    let model = load_tiny(&mut rt);
    let cfg = put(&mut rt, &greedy_config(0));
    let out = rt.alloc(24);
    assert_eq!(rt.session_new(model, cfg, 40, out), Ok(()));
    let session = read_u64(&mut rt, out);
    let prompt: Vec<u8> = [256u32, 116, 105, 110, 121].iter().flat_map(|t| t.to_le_bytes()).collect();
    let tokens = put(&mut rt, &prompt);
    assert_eq!(rt.prefill(session, tokens, 5), Ok(()));
    (rt, session, out, tokens)
}

#[test]
fn end_to_end_matches_the_self_test_tokens() {
    let (mut rt, session, out, _) = tiny_session_prefilled();
    let mut got = Vec::new();
    for _ in 0..8 {
        assert_eq!(rt.decode(session, out), Ok(()));
        got.push(le_u32(rt.windows.get_mut(out, 4).unwrap(), 0));
    }
    assert_eq!(got, selftest::TINY_EXPECTED);
}

#[test]
fn handles_are_typed_and_generational() {
    let mut rt = Runtime::default();
    let model = load_tiny(&mut rt);
    assert_eq!(rt.session_free(model), Err(TrResult::InvalidHandle)); // wrong type
    assert_eq!(rt.model_free(0), Err(TrResult::InvalidHandle)); // generation 0
    assert_eq!(rt.model_free(model + 5), Err(TrResult::InvalidHandle)); // slot never used
    assert_eq!(rt.model_free(model + (1 << 32)), Err(TrResult::InvalidHandle)); // future gen
    assert_eq!(rt.model_free(model), Ok(()));
    assert_eq!(rt.model_free(model), Err(TrResult::StaleHandle));
    let again = load_tiny(&mut rt);
    assert_eq!(again as u32, model as u32, "slot reused");
    assert_ne!(again, model, "with a new generation");
    assert_eq!(rt.model_free(model), Err(TrResult::StaleHandle));
}

#[test]
fn addresses_outside_windows_are_rejected() {
    let mut rt = Runtime::default();
    let w = rt.alloc(16);
    assert_ne!(w, 0);
    assert_eq!(rt.alloc(0), 0);
    assert_eq!(rt.model_load(w, 32, w).err(), Some(TrResult::Bounds)); // overruns window
    assert_eq!(rt.model_load(w, 16, w + 12).err(), Some(TrResult::Bounds)); // out record
    assert_eq!(rt.model_load(u32::MAX - 2, 8, w).err(), Some(TrResult::Bounds)); // wraps
    let c = rt.alloc(COUNTERS_RECORD_BYTES);
    assert_eq!(rt.path_counters(c + 8), Err(TrResult::Bounds)); // record overruns the window
    assert_eq!(rt.path_counters(c), Ok(()));
    assert_eq!(rt.free(c, COUNTERS_RECORD_BYTES), Ok(()));
    assert_eq!(rt.path_counters(w), Err(TrResult::Bounds)); // 32-byte record, 16-byte window
    assert_eq!(rt.free(w, 15), Err(TrResult::InvalidArgument));
    assert_eq!(rt.free(w, 16), Ok(()));
    assert_eq!(rt.free(w, 16), Err(TrResult::InvalidArgument));
    assert_eq!(rt.path_counters(w), Err(TrResult::Bounds)); // freed
}

#[test]
fn malformed_model_bytes_return_codes() {
    let mut rt = Runtime::default();
    let out = rt.alloc(8);
    for cut in [0usize, 10, 63, 64, 100, 1000, TINY_MODEL.len() - 1] {
        let w = put(&mut rt, &TINY_MODEL[..cut.max(1)]);
        let got = rt.model_load(w, cut.max(1) as u32, out);
        assert_eq!(got, Err(TrResult::Bounds), "truncated at {cut}");
    }
}

#[test]
fn preflight_reports_and_rejects_before_allocating() {
    let mut rt = Runtime::default();
    let model = load_tiny(&mut rt);
    let out = rt.alloc(16);
    assert_eq!(rt.preflight(model, 32, u64::MAX, out), Ok(()));
    let peak = read_u64(&mut rt, out);
    assert!(peak > TINY_MODEL.len() as u64);
    assert_eq!(rt.preflight(model, 32, peak - 1, out), Err(TrResult::OutOfMemory));
    assert_eq!(rt.preflight(model, 32, peak, out), Ok(()));
    assert_eq!(rt.preflight(model, 33, u64::MAX, out), Err(TrResult::ContextExceeded));
    assert_eq!(rt.preflight(model, 0, u64::MAX, out), Err(TrResult::InvalidArgument));
}

#[test]
fn session_config_is_validated() {
    let mut rt = Runtime::default();
    let model = load_tiny(&mut rt);
    let out = rt.alloc(8);
    let mut bad = greedy_config(0);
    bad[36] = 1; // reserved
    let w = put(&mut rt, &bad);
    assert_eq!(rt.session_new(model, w, 40, out), Err(TrResult::InvalidArgument));
    let w = put(&mut rt, &greedy_config(33));
    assert_eq!(rt.session_new(model, w, 40, out), Err(TrResult::ContextExceeded));
    let mut neg = greedy_config(0);
    neg[16..20].copy_from_slice(&(-1.0f32).to_le_bytes());
    let w = put(&mut rt, &neg);
    assert_eq!(rt.session_new(model, w, 40, out), Err(TrResult::InvalidArgument));
    let w = put(&mut rt, &greedy_config(0)[..39]);
    assert_eq!(rt.session_new(model, w, 39, out), Err(TrResult::InvalidArgument));
}

#[test]
fn lane_is_scalar_natively() {
    assert_eq!(lane(), LANE_SCALAR);
}

// ---- loader exports (loader_abi.rs) ----

#[test]
fn self_test_detail_lists_every_test_with_its_category() {
    let mut rt = Runtime::default();
    let need = loader_abi::detail_record_bytes();
    let out = rt.alloc(need);
    assert_eq!(rt.self_test_detail(out, need - 1), Err(TrResult::InvalidArgument));
    assert_eq!(rt.self_test_detail(out, need), Ok(()));
    let rec = rt.windows.get_mut(out, need).unwrap().to_vec();
    assert_eq!((le_u32(&rec, 0), le_u32(&rec, 4)), (0, selftest::TESTS.len() as u32));
    for (i, (name, _)) in selftest::TESTS.iter().enumerate() {
        let row = &rec[8 + 32 * i..8 + 32 * (i + 1)];
        let stored: Vec<u8> = row[8..].iter().copied().take_while(|b| *b != 0).collect();
        assert_eq!(stored, name.as_bytes());
        assert_eq!(Some(le_u32(row, 0)), selftest::categories::category_of(name));
        assert_eq!(le_u32(row, 4), 0);
    }
}

#[test]
fn every_self_test_has_a_category_and_a_name_that_fits() {
    let names: Vec<&str> = selftest::TESTS.iter().map(|(n, _)| *n).collect();
    let table: Vec<&str> = selftest::categories::OF_TEST.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, table);
    assert!(names.iter().all(|n| n.len() <= loader_abi::DETAIL_NAME_BYTES));
}

#[test]
fn header_preflight_equals_preflight_of_the_loaded_model() {
    let mut rt = Runtime::default();
    let model = load_tiny(&mut rt);
    let out = rt.alloc(16);
    assert_eq!(rt.preflight(model, 16, u64::MAX, out), Ok(()));
    let loaded = rt.windows.get_mut(out, 16).unwrap().to_vec();
    let prefix_len = tinyrustlm_core::admission::prefix_bytes(TINY_MODEL).unwrap() as usize;
    let prefix = put(&mut rt, &TINY_MODEL[..prefix_len]);
    let total = TINY_MODEL.len() as u64;
    assert_eq!(rt.preflight_header(prefix, prefix_len as u32, total, 16, u64::MAX, out), Ok(()));
    assert_eq!(rt.windows.get_mut(out, 16).unwrap().to_vec(), loaded);
    let peak = le_u64(&loaded, 0);
    let budget_too_small = rt.preflight_header(prefix, prefix_len as u32, total, 16, peak - 1, out);
    assert_eq!(budget_too_small, Err(TrResult::OutOfMemory));
    // a prefix shorter than the directory, or a file length that disagrees with the header
    assert_eq!(rt.preflight_header(prefix, 64, total, 16, u64::MAX, out), Err(TrResult::Bounds));
    assert_eq!(rt.preflight_header(prefix, prefix_len as u32, total - 1, 16, u64::MAX, out), Err(TrResult::Bounds));
    assert_eq!(
        rt.preflight_header(prefix, prefix_len as u32, total + 1, 16, u64::MAX, out),
        Err(TrResult::InvalidModel)
    );
}

#[test]
fn rewind_keeps_a_prefix_and_refuses_beyond_the_position() {
    let (mut rt, session, out, tokens) = tiny_session_prefilled();
    assert_eq!(rt.decode(session, out), Ok(()));
    assert_eq!(rt.session_rewind(session, 6), Err(TrResult::InvalidArgument), "the pending token is not cached");
    assert_eq!(rt.session_rewind(session, 4), Ok(()));
    assert_eq!(rt.session_digest(session, out), Ok(()));
    assert_eq!(read_u64(&mut rt, out), 4);
    assert_eq!(rt.decode(session, out), Err(TrResult::InvalidArgument), "no logits after a rewind");
    // the last prompt token again: the same first token as the fresh run
    assert_eq!(rt.prefill(session, tokens + 16, 1), Ok(()));
    assert_eq!(rt.decode(session, out), Ok(()));
    assert_eq!(le_u32(rt.windows.get_mut(out, 4).unwrap(), 0), selftest::TINY_EXPECTED[0]);
    assert_eq!(rt.session_rewind(session + (1 << 32), 0), Err(TrResult::InvalidHandle), "a handle never issued");
}
