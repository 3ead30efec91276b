"""The pinned Rust toolchain: the lock file, what is installed, drift, install and re-lock."""
