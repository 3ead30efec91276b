//! One generation through a session (`run`, and `golden`'s end-to-end vectors): prefill the
//! prompt, decode up to a token budget, time both.

use std::time::Instant;

use tinyrustlm_core::model::Model;
use tinyrustlm_core::session::{Session, SessionConfig};
use tinyrustlm_core::{tokenizer, TrResult};

use crate::error::CliError;

/// What one `run` produced (also used by `golden` for end-to-end vectors).
pub struct RunOutput {
    pub prompt_tokens: Vec<u32>,
    pub tokens: Vec<u32>,
    pub stop: &'static str,
    pub prefill_ms: f64,
    pub decode_ms: Vec<f64>,
    pub final_rng: (u64, u64),
}

pub fn generate(model: &Model, config: SessionConfig, prompt: &str, max_tokens: u32) -> Result<RunOutput, CliError> {
    let mut session = Session::new(model, config).map_err(|c| CliError::runtime("session", c))?;
    let mut prompt_tokens = Vec::new();
    tokenizer::encode(prompt.as_bytes(), &mut prompt_tokens);
    let start = Instant::now();
    session.prefill(model, &prompt_tokens).map_err(|c| CliError::runtime("prefill", c))?;
    let prefill_ms = start.elapsed().as_secs_f64() * 1e3;
    let (mut tokens, mut decode_ms, mut stop) = (Vec::new(), Vec::new(), "max-tokens");
    while tokens.len() < max_tokens as usize {
        let t0 = Instant::now();
        let step = match session.decode(model) {
            Ok(step) => step,
            Err(TrResult::ContextExceeded) => {
                stop = "context";
                break;
            }
            Err(code) => return Err(CliError::runtime("decode", code)),
        };
        decode_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        tokens.push(step.token);
        if step.done {
            stop = "eos";
            break;
        }
    }
    let final_rng = (session.rng.state, session.rng.increment);
    Ok(RunOutput { prompt_tokens, tokens, stop, prefill_ms, decode_ms, final_rng })
}

pub fn text_of(tokens: &[u32]) -> String {
    let bytes: Vec<u8> = tokens.iter().filter_map(|t| tokenizer::decode(*t)).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
