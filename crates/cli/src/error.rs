//! The command line's one error type and its exit codes (README.md), apart from the commands
//! so that argument parsing and the commands both depend on it and not on each other.

use tinyrustlm_core::TrResult;

pub const EXIT_OK: u8 = 0;
pub const EXIT_CHECK_FAILED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_ERROR: u8 = 3;

pub struct CliError {
    pub message: String,
    pub exit_code: u8,
}

impl CliError {
    pub fn usage(message: String) -> CliError {
        CliError { message, exit_code: EXIT_USAGE }
    }
    pub fn input(message: String) -> CliError {
        CliError { message, exit_code: EXIT_ERROR }
    }
    /// A TrResult from the runtime: named, with its code.
    pub fn runtime(what: &str, code: TrResult) -> CliError {
        CliError::input(format!("{what}: {} (TrResult {})", code.name(), code.code()))
    }
}
