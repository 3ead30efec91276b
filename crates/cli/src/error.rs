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

/// Writes one line to stdout; a closed or failing stdout (`... | head`) is a typed error,
/// never the panic `println!` raises.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        writeln!(::std::io::stdout().lock(), $($arg)*).map_err($crate::error::CliError::stdout)?
    }};
}
pub(crate) use outln;

impl CliError {
    pub fn usage(message: String) -> CliError {
        CliError { message, exit_code: EXIT_USAGE }
    }
    pub fn input(message: String) -> CliError {
        CliError { message, exit_code: EXIT_ERROR }
    }
    /// stdout could not be written (the reader went away): exit 3, a line on stderr.
    pub fn stdout(err: std::io::Error) -> CliError {
        let why = if err.kind() == std::io::ErrorKind::BrokenPipe { "closed by the reader" } else { "failed" };
        CliError::input(format!("error[output.closed]: stdout {why}: {err}"))
    }
    /// A TrResult from the runtime: named, with its code.
    pub fn runtime(what: &str, code: TrResult) -> CliError {
        CliError::input(format!("{what}: {} (TrResult {})", code.name(), code.code()))
    }
}
