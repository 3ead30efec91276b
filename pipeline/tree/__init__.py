"""The source tree a build or release is made from, read once (`snapshot.read_tree`).

`paths` spells each file's place in the tree once; `lanes` is manifests/lanes.toml as frozen
values; `sources` holds the git facts and the crate and Python closures; `snapshot` gathers
them with the parsed toolchain.lock and its one digest into a frozen `Tree`.
"""
