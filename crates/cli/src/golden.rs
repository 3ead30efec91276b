//! `golden`: regenerate tests/golden/ from the scalar oracle (filled in below).
use crate::args::Args;
use crate::commands::CliError;
pub const VALUED: &[&str] = &["out", "small-model", "source-revision", "generated-utc"];
pub fn command(_args: &Args) -> Result<u8, CliError> {
    Err(CliError::usage("golden: not yet implemented".into()))
}
