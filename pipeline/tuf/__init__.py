"""What the TUF producer (`pipeline.publish`) and client (`pipeline.fetch`) share: the
repository policy (`policy`, repository.toml, package data), how a release maps to targets
(`releases`) and one error class per failure with a stable id (`errors`)."""
