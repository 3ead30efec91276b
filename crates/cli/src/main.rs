//! `tinyrustlm`: the native command line over the scalar oracle.
//!
//!   tinyrustlm self-test
//!   tinyrustlm inspect-model FILE [--json]
//!   tinyrustlm run --model FILE --prompt TEXT [--seed N] [--max-tokens K] [--temperature T]
//!                  [--top-k K] [--top-p P] [--repetition-penalty R] [--context C] [--json]
//!   tinyrustlm chat --model FILE --turns FILE [run's sampler flags] [--no-reuse] [--json]
//!   tinyrustlm golden --out DIR --small-model FILE --int8-model FILE --source-revision REV --generated-utc TIME
//!
//! Exit codes: 0 ok, 1 a check failed (self-test), 2 usage (including `--context` outside
//! 1..=max_context and `--max-tokens` beyond the context), 3 bad input (the TrResult is
//! printed by name and code; a model file too large to hold; stdout closed by its reader).

mod args;
mod chat;
mod commands;
mod error;
mod generate;
mod golden;
mod json;
mod model_file;
mod session_flags;
mod sha256;

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match commands::dispatch(&argv) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            // Never panic on a closed stderr either: the exit code still tells.
            let _ = writeln!(std::io::stderr(), "tinyrustlm: {}", err.message);
            ExitCode::from(err.exit_code)
        }
    }
}
