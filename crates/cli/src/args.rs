//! A small `--flag value` parser (no external crates): flags are declared, unknown ones fail.

use std::collections::BTreeMap;
use std::str::FromStr;

use crate::error::CliError;

pub struct Args {
    values: BTreeMap<String, String>,
    switches: Vec<String>,
    pub positional: Vec<String>,
}

/// Parses `argv` given the flags that take a value and the boolean switches.
pub fn parse(argv: &[String], valued: &[&str], switches: &[&str]) -> Result<Args, CliError> {
    let mut args = Args { values: BTreeMap::new(), switches: Vec::new(), positional: Vec::new() };
    let mut i = 0;
    while i < argv.len() {
        let a = &argv[i];
        if let Some(name) = a.strip_prefix("--") {
            if valued.contains(&name) {
                let v = argv.get(i + 1).ok_or_else(|| CliError::usage(format!("--{name} needs a value")))?;
                args.values.insert(name.to_string(), v.clone());
                i += 2;
                continue;
            }
            if switches.contains(&name) {
                args.switches.push(name.to_string());
                i += 1;
                continue;
            }
            return Err(CliError::usage(format!("unknown option --{name}")));
        }
        args.positional.push(a.clone());
        i += 1;
    }
    Ok(args)
}

impl Args {
    pub fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    pub fn get<T: FromStr>(&self, name: &str, default: T) -> Result<T, CliError> {
        match self.values.get(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| CliError::usage(format!("--{name}: cannot parse {v:?}"))),
        }
    }

    /// The flag's value if it was given (parsed), `None` if it was not.
    pub fn optional<T: FromStr>(&self, name: &str) -> Result<Option<T>, CliError> {
        match self.values.get(name) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| CliError::usage(format!("--{name}: cannot parse {v:?}"))),
        }
    }

    pub fn required(&self, name: &str) -> Result<String, CliError> {
        self.values.get(name).cloned().ok_or_else(|| CliError::usage(format!("--{name} is required")))
    }
}
