"""The source tree a build or release is made from, read once (`snapshot.read_tree`).

`lanes` is manifests/lanes.toml as frozen values; `sources` holds the git facts and the crate
and Python closures; `snapshot` gathers them with the parsed toolchain.lock and its one digest
into a frozen `Tree`. Where each file is, is `pipeline.paths`.
"""
