//! The session flags `run` and `chat` share: the sampler, the context and the token budget.

use tinyrustlm_core::model::Model;
use tinyrustlm_core::sampler::SamplerConfig;
use tinyrustlm_core::session::SessionConfig;

use crate::args::Args;
use crate::error::CliError;

/// The valued flags `session_config` reads.
pub const VALUED: &[&str] =
    &["seed", "stream", "max-tokens", "temperature", "top-k", "top-p", "repetition-penalty", "context"];

/// A command's own valued flags and the session's.
pub fn with(own: &[&'static str]) -> Vec<&'static str> {
    [own, VALUED].concat()
}

/// The session config and token budget of `run` and `chat` from their flags (validated against
/// the model's context).
pub fn session_config(args: &Args, model: &Model) -> Result<(SessionConfig, u32), CliError> {
    let sampler = SamplerConfig {
        temperature: args.get("temperature", 0.0f32)?,
        top_k: args.get("top-k", 0u32)?,
        top_p: args.get("top-p", 1.0f32)?,
        repetition_penalty: args.get("repetition-penalty", 1.0f32)?,
    };
    sampler.validate().map_err(|c| CliError::usage(format!("sampler settings: {}", c.name())))?;
    // The context must be one the model holds; no run can emit more tokens than it.
    let max_context = model.config.max_context;
    let context = args.optional::<u32>("context")?.unwrap_or(max_context);
    if context == 0 || context > max_context {
        return Err(CliError::usage(format!(
            "error[usage.context]: --context {context}: must be between 1 and the model's \
             max_context {max_context}"
        )));
    }
    let max_tokens = args.get("max-tokens", 16u32)?;
    if max_tokens > context {
        return Err(CliError::usage(format!(
            "error[usage.max-tokens]: --max-tokens {max_tokens}: more than the context of \
             {context} tokens can hold"
        )));
    }
    let config = SessionConfig {
        seed: args.get("seed", 0u64)?,
        stream: args.get("stream", 0u64)?,
        sampler,
        context,
        mask: Vec::new(),
    };
    Ok((config, max_tokens))
}
