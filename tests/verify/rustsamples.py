"""Tiny Rust programs compiled with the pinned /usr/bin/rustc, as real-toolchain samples.

Never bare `rustc` (a newer rustup toolchain may be first on PATH). Each sample records how
it was produced: the command line is in SAMPLES below.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.lanebuild.stdbuild import ensure_sysroot
from pipeline.toolchain.lockfile import load_lock
from pipeline.tree.lanes import load_lanes
from verify.policy import load_wasm_policies
from verify.wasm.tools import executable

REPO = Path(__file__).resolve().parents[2]

RUSTC = Path("/usr/bin/rustc")

WASM_SRC = r"""
#![no_std]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! { loop {} }
macro_rules! exports {
    ($($n:ident),*) => { $( #[no_mangle] pub extern "C" fn $n() -> i32 { 0 } )* }
}
exports!(@EXPORTS@);
#[no_mangle]
pub extern "C" fn tr_dot(a: *const f32, b: *const f32, n: usize) -> f32 {
    let (a, b) = unsafe { (core::slice::from_raw_parts(a, n), core::slice::from_raw_parts(b, n)) };
    #[cfg(target_feature = "simd128")]
    {
        use core::arch::wasm32::*;
        let mut acc = f32x4_splat(0.0);
        let mut i = 0;
        while i + 4 <= n {
            let x = unsafe { v128_load(a.as_ptr().add(i) as *const v128) };
            let y = unsafe { v128_load(b.as_ptr().add(i) as *const v128) };
            acc = f32x4_add(acc, f32x4_mul(x, y));
            i += 4;
        }
        return f32x4_extract_lane::<0>(acc) + f32x4_extract_lane::<1>(acc)
            + f32x4_extract_lane::<2>(acc) + f32x4_extract_lane::<3>(acc);
    }
    #[cfg(not(target_feature = "simd128"))]
    { let mut s = 0.0; for i in 0..n { s += a[i] * b[i]; } s }
}
""".replace(  # every function export the lane policy requires of every lane
    "@EXPORTS@", ", ".join(load_wasm_policies()["scalar-wasm32"].required_exports)
)

NATIVE_SRC = r"""
use std::io::Write;
fn dot(a: &[f32], b: &[f32]) -> f32 { a.iter().zip(b).map(|(x, y)| x * y).sum() }
fn main() {
    let v: Vec<f32> = (0..64).map(|i| i as f32 * 0.5).collect();
    writeln!(std::io::stdout(), "dot={}", dot(&v, &v)).unwrap();
}
"""

# The lanes' pinned wasm-ld (rustc's default, rust-lld, is not part of Debian's rustc).
_WASM_LINKER = load_lanes(REPO / "manifests" / "lanes.toml").select(["scalar-wasm32"])[0].linker
# --strip-debug keeps target_features (--strip-all would drop it); the name and producers
# sections are then removed with `wasm-tools strip -d name -d producers`.
_WASM = ["--target", "wasm32-unknown-unknown", "--crate-type", "cdylib", "-O",
         "-C", "target-cpu=mvp", "-C", f"linker={_WASM_LINKER}",
         "-C", "link-arg=--strip-debug"]  # fmt: skip
_NATIVE = ["-O", "-C", "strip=debuginfo"]
# sample name -> (source, rustc arguments after the source file, output file name)
SAMPLES: dict[str, tuple[str, list[str], str]] = {
    "scalar-wasm32": (WASM_SRC, _WASM, "scalar.wasm"),
    "simd128-wasm32": (WASM_SRC, [*_WASM, "-C", "target-feature=+simd128"], "simd.wasm"),
    "x86_64-unknown-linux-gnu": (NATIVE_SRC, _NATIVE, "x86_64"),
    "aarch64-unknown-linux-gnu": (
        NATIVE_SRC,
        [*_NATIVE, "--target", "aarch64-unknown-linux-gnu", "-C", "linker=aarch64-linux-gnu-gcc"],
        "aarch64",
    ),
    "x86_64-pc-windows-gnu": (
        NATIVE_SRC,
        [
            *_NATIVE,
            "--target",
            "x86_64-pc-windows-gnu",
            "-C",
            "linker=x86_64-w64-mingw32-gcc",
            "-C",
            "link-arg=-Wl,--no-insert-timestamp",
        ],
        "win64.exe",
    ),
    "x86_64-debug": (NATIVE_SRC, ["-g"], "x86_64-debug"),
}


def _std_for(args: list[str]) -> list[str]:
    """`--sysroot` of the std rebuilt for the sample's target, and that lane's own codegen
    flags, where Debian ships no prebuilt std (wasm32, Windows): the release's own
    (content-cached) std, so a sample is built as the lane would build it."""
    if "--target" not in args:
        return []
    target = args[args.index("--target") + 1]
    lanes = load_lanes(REPO / "manifests" / "lanes.toml")
    lane = next((x for x in lanes.lane if x.target == target and x.build_std), None)
    if lane is None:
        return []
    sysroot = ensure_sysroot(lane, load_lock(REPO / "toolchain.lock")).root
    flags = list(lane.rustflags)
    if "strip=debuginfo" in flags:  # the sample strips (or keeps, x86_64-debug) on its own
        at = flags.index("strip=debuginfo")
        del flags[at - 1 : at + 1]
    # that std is built for the release profile (panic=abort, linked with fat LTO)
    return ["--sysroot", str(sysroot), *flags, "-C", "panic=abort", "-C", "lto=fat"]


def compile_sample(name: str, folder: Path) -> Path:
    """Compile sample `name` into `folder` (skips the test if the toolchain is missing)."""
    if not RUSTC.exists():
        pytest.skip("the pinned /usr/bin/rustc is not installed")
    source, args, out_name = SAMPLES[name]
    src = folder / f"{name}.rs"
    src.write_text(source, encoding="utf-8")
    out = folder / out_name
    remap = f"--remap-path-prefix={folder}=/src/tinyrustlm"
    done = subprocess.run([str(RUSTC), str(src), "-o", str(out), remap, *_std_for(args), *args],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.fail(f"rustc failed for {name}:\n{done.stderr[-3000:]}")
    if out.suffix == ".wasm":
        strip = [
            str(executable()),
            "strip",
            "-d",
            "name",
            "-d",
            "producers",
            str(out),
            "-o",
            str(out),
        ]
        subprocess.run(strip, check=True, capture_output=True)
    return out
