//! `tinyrustlm chat`: a conversation of several turns through one session that keeps its K/V
//! (CONTRACT.md §11). Each line of the turns file is a turn's new text; a turn's prompt is the
//! conversation so far (every earlier prompt and generated token) followed by the line's bytes
//! (the first turn: BOS + its line). With reuse (the default) a turn prefills only what the
//! exact-prefix rule and the cache identity allow it not to; `--no-reuse` runs every turn on a
//! fresh session. Both give the same tokens bit for bit; the time to first token differs.

use std::time::Instant;

use tinyrustlm_core::model::Model;
use tinyrustlm_core::session::{numerical_mode, CacheIdentity, Reuse, Session, SessionConfig};
use tinyrustlm_core::session::{KV_LAYOUT_VERSION, NORMALIZATION_VERSION, TOKENIZER_BYTES};
use tinyrustlm_core::tokenizer::BOS;
use tinyrustlm_core::TrResult;

use crate::args::Args;
use crate::error::{outln, CliError, EXIT_OK};
use crate::generate::text_of;
use crate::model_file::{read_file, read_model};
use crate::{json, session_flags, sha256};

/// The native lane this binary is (the lane ids of manifests/lanes.toml).
fn native_lane() -> &'static str {
    if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        "x86_64-unknown-linux-gnu"
    } else if cfg!(all(target_arch = "aarch64", target_os = "linux")) {
        "aarch64-unknown-linux-gnu"
    } else if cfg!(all(target_arch = "x86_64", windows)) {
        "x86_64-pc-windows-gnu"
    } else {
        "native"
    }
}

/// The identity of the K/V this binary computes for `model` (SHA-256 `digest`).
pub fn identity(model: &Model, digest: &str) -> CacheIdentity {
    CacheIdentity {
        model_sha256: digest.to_string(),
        tokenizer_sha256: sha256::hex(TOKENIZER_BYTES.as_bytes()),
        normalization_version: NORMALIZATION_VERSION,
        chat_template_sha256: None,
        numerical_mode: numerical_mode(model.config.tier).to_string(),
        kv_layout_version: KV_LAYOUT_VERSION,
        lane: native_lane().to_string(),
    }
}

/// One turn's outcome.
struct Turn {
    reuse: Reuse,
    prompt_len: usize,
    tokens: Vec<u32>,
    ttft_ms: f64,
}

/// Runs one turn on `session` (reuse) or a fresh session, decoding up to `max_tokens`.
fn turn(
    model: &Model,
    session: &mut Session,
    id: &CacheIdentity,
    prompt: &[u32],
    max_tokens: u32,
    reuse: bool,
) -> Result<Turn, CliError> {
    let start = Instant::now();
    if !reuse {
        *session = Session::new(model, session.config.clone()).map_err(|c| CliError::runtime("session", c))?;
    }
    let r = session.turn(model, id, id, prompt).map_err(|c| CliError::runtime("turn", c))?;
    let (mut tokens, mut ttft_ms) = (Vec::new(), 0.0);
    while tokens.len() < max_tokens as usize {
        let step = match session.decode(model) {
            Ok(step) => step,
            Err(TrResult::ContextExceeded) => break,
            Err(code) => return Err(CliError::runtime("decode", code)),
        };
        if tokens.is_empty() {
            ttft_ms = start.elapsed().as_secs_f64() * 1e3;
        }
        tokens.push(step.token);
        if step.done {
            break;
        }
    }
    Ok(Turn { reuse: r, prompt_len: prompt.len(), tokens, ttft_ms })
}

fn turn_json(t: &Turn) -> String {
    let fields = [
        ("prompt_tokens", t.prompt_len.to_string()),
        ("reused", t.reuse.reused.to_string()),
        ("recomputed", t.reuse.recomputed.to_string()),
        ("refused", t.reuse.refused.map_or("null".to_string(), json::string)),
        ("tokens", json::list(&t.tokens, |v| v.to_string())),
        ("text", json::string(&text_of(&t.tokens))),
        ("ttft_ms", json::number(t.ttft_ms)),
    ];
    json::object(&fields, false)
}

fn identity_json(id: &CacheIdentity) -> String {
    let fields = [
        ("model_sha256", json::string(&id.model_sha256)),
        ("tokenizer_sha256", json::string(&id.tokenizer_sha256)),
        ("normalization_version", id.normalization_version.to_string()),
        ("chat_template_sha256", id.chat_template_sha256.as_deref().map_or("null".to_string(), json::string)),
        ("numerical_mode", json::string(&id.numerical_mode)),
        ("kv_layout_version", id.kv_layout_version.to_string()),
        ("lane", json::string(&id.lane)),
    ];
    json::object(&fields, false)
}

pub fn command(args: &Args) -> Result<u8, CliError> {
    let (model, digest) = read_model(&args.required("model")?)?;
    let path = args.required("turns")?;
    let text = String::from_utf8(read_file(&path)?)
        .map_err(|_| CliError::input(format!("error[input.turns]: {path}: not UTF-8")))?;
    let (config, max_tokens): (SessionConfig, u32) = session_flags::session_config(args, &model)?;
    let reuse = !args.switch("no-reuse");
    let id = identity(&model, &digest);
    let mut session = Session::new(&model, config).map_err(|c| CliError::runtime("session", c))?;
    let (mut conversation, mut turns) = (vec![BOS], Vec::new());
    for line in text.lines() {
        conversation.extend(line.bytes().map(u32::from));
        let t = turn(&model, &mut session, &id, &conversation, max_tokens, reuse)?;
        conversation.extend_from_slice(&t.tokens);
        turns.push(t);
    }
    if args.switch("json") {
        let fields = [
            ("schema", json::string("tinyrustlm.chat.v1")),
            ("reuse", reuse.to_string()),
            ("identity", identity_json(&id)),
            ("turns", json::list(&turns, turn_json)),
        ];
        outln!("{}", json::object(&fields, true));
        return Ok(EXIT_OK);
    }
    for (i, t) in turns.iter().enumerate() {
        let why = t.reuse.refused.map_or(String::new(), |f| format!(" (identity field {f} changed)"));
        outln!(
            "turn {}: {} prompt tokens, {} reused, {} recomputed{why}; first token {:.3} ms",
            i + 1,
            t.prompt_len,
            t.reuse.reused,
            t.reuse.recomputed,
            t.ttft_ms
        );
        outln!("  text: {:?}", text_of(&t.tokens));
    }
    Ok(EXIT_OK)
}
