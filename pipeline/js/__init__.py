"""The loader's generated JS and its npm package (crates/wasm/js): `constants` (constants.js,
from the Rust sources and the wasm policy), `probes` (probes.js, from the `.wat` probes) and
`package` (package.json and `npm pack` of the shipped files)."""
