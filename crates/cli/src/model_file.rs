//! Reading a model file for the commands: a regular file only, held in a buffer reserved
//! fallibly, loaded and hashed.

use std::io::Read;

use tinyrustlm_core::model::Model;
use tinyrustlm_core::TrResult;

use crate::error::CliError;
use crate::sha256;

/// Reads a model file: a regular file only (a FIFO or device would block or never end), into
/// a buffer reserved fallibly, so a huge file is a typed error instead of an allocation abort.
pub fn read_file(path: &str) -> Result<Vec<u8>, CliError> {
    let io = |e: std::io::Error| CliError::input(format!("{path}: {e}"));
    let not_regular = || CliError::input(format!("error[input.not-regular]: {path}: not a regular file"));
    // stat before open: opening a FIFO blocks until a writer appears.
    if !std::fs::metadata(path).map_err(io)?.is_file() {
        return Err(not_regular());
    }
    let mut file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    let len = usize::try_from(meta.len()).map_err(|_| too_large(path, meta.len()))?;
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len).map_err(|_| too_large(path, meta.len()))?;
    // take(): a file that grows while we read cannot push us past what we reserved.
    (&mut file).take(meta.len()).read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}

fn too_large(path: &str, len: u64) -> CliError {
    CliError::input(format!(
        "error[input.too-large]: {path}: {len} bytes cannot be held in memory ({} {})",
        TrResult::OutOfMemory.name(),
        TrResult::OutOfMemory.code()
    ))
}

pub fn read_model(path: &str) -> Result<(Model, String), CliError> {
    let bytes = read_file(path)?;
    let digest = sha256::hex(&bytes);
    let model = Model::load(bytes).map_err(|code| CliError::runtime(path, code))?;
    Ok((model, digest))
}
