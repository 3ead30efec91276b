"""tinyrustlm-release pipeline: toolchain pinning, builds, self-tests, signing, bundles."""
