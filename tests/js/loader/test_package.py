"""The loader as an npm package: package.json current with the release version, `npm pack`
byte-identical twice, a strict TypeScript consumer compiling against the installed tarball, and
the JSDoc type check (`tsc --checkJs`) of every shipped and test .js/.mjs clean.

TypeScript and node's types come from tests/jstools (exact versions and integrity hashes in its
package-lock.json, `npm ci` from the npm registry); node and npm are the pinned wheel's."""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

import pytest

from pipeline.js import package
from tests import jstools

REPO_ROOT = Path(__file__).resolve().parents[3]
JS = REPO_ROOT / "crates/wasm/js"

CONSUMER = """\
import {
  load, LoaderError, loaderStats, compareVersions, RECEIPT_SCHEMA,
  type LoadOptions, type Loaded, type LoaderErrorCode, type Receipt, type Progress,
} from 'tinyrustlm-loader';

const progress: Progress[] = [];
const options: LoadOptions = {
  trustedKeys: { schema: 'tinyrustlm.trusted-keys.v1', keys: [] },
  baseUrl: new URL('https://example.org/tinyrustlm/'),
  model: { url: 'model.trlm', size: 618176, sha256: '00'.repeat(32) },
  cache: 'auto',
  minVersion: '0.1.0',
  onProgress: (p) => progress.push(p),
  onCacheError: (e) => console.warn(e.code, e.detail),
  denyLanes: ['simd128-threads-wasm32'],
  workers: 2,
};

function explain(code: LoaderErrorCode): string {
  switch (code) {
    case 'Rollback': return 'older than a release accepted before';
    case 'BoundExceeded': return 'a download ran past its bound';
    default: return code;
  }
}

export async function run(): Promise<string> {
  let lm: Loaded | null = null;
  try {
    lm = await load(options);
    const receipt: Receipt = lm.receipt;
    const fromCache: boolean = receipt.fetched.some((f) => f.cache === 'hit');
    await lm.prefill('Once upon a time');
    let text = '';
    for await (const t of lm.decode({ maxTokens: 8 })) text += t.text;
    return `${receipt.schema === RECEIPT_SCHEMA} ${fromCache} ${lm.plan.budget} ${text}`;
  } catch (e) {
    if (e instanceof LoaderError) return explain(e.code);
    throw e;
  } finally {
    await lm?.close();
    const n: number = loaderStats().instantiations + compareVersions('1.0.0', '0.9.9');
    void n;
  }
}
"""
TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "noEmit": True,
        "target": "es2022",
        "module": "nodenext",
        "moduleResolution": "nodenext",
        "lib": ["es2022", "dom", "dom.iterable"],
        "types": [],
        "skipLibCheck": False,
    },
    "files": ["consumer.ts"],
}


def test_package_json_is_current() -> None:
    """Its version is the release's (pyproject); `python -m pipeline.js.package` rewrites it."""
    assert (REPO_ROOT / package.PACKAGE_JSON).read_bytes() == package.render(
        package.release_version()
    )


def test_the_package_lists_every_shipped_module() -> None:
    shipped = {p.name for p in JS.glob("*.js")}
    assert set(package.MODULES) == shipped
    doc = json.loads((JS / "package.json").read_bytes())
    assert doc["type"] == "module" and doc["types"] == "./loader.d.ts"
    assert set(doc["exports"]["."]) >= {"types", "browser", "node", "default"}


def pack_under(umask: int) -> bytes:
    """npm pack of crates/wasm/js with the process umask set to `umask` (what a clone's
    checkout mode would differ by)."""
    old = os.umask(umask)
    try:
        name, data = package.pack(REPO_ROOT)
    finally:
        os.umask(old)
    assert name == package.tarball_name(package.release_version())
    return data


def test_npm_pack_is_reproducible(tmp_path: Path) -> None:
    one = pack_under(0o022)
    two = pack_under(0o077)
    assert one == two
    (tmp_path / "p.tgz").write_bytes(one)
    with tarfile.open(tmp_path / "p.tgz") as tar:
        members = tar.getmembers()
        assert {m.mtime for m in members} == {499162500}  # npm's fixed 1985-10-26
        assert {(m.uid, m.gid, m.mode) for m in members} == {(0, 0, 0o644)}
        names = sorted(m.name for m in members)
    expected = sorted(f"package/{n}" for n in (*package.MODULES, package.TYPES, "package.json"))
    assert names == expected


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A consumer project with the packed tarball installed by the pinned node's npm."""
    project = tmp_path_factory.mktemp("consumer")
    name, data = package.pack(REPO_ROOT)
    (project / name).write_bytes(data)
    (project / "package.json").write_text('{"name": "consumer", "private": true}\n')
    done = jstools.npm(
        "install", f"./{name}", "--ignore-scripts", "--no-audit", "--no-fund", cwd=project
    )
    assert done.returncode == 0, done.stderr
    (project / "tsconfig.json").write_text(json.dumps(TSCONFIG))
    return project


def test_a_strict_typescript_consumer_compiles(installed: Path) -> None:
    (installed / "consumer.ts").write_text(CONSUMER)
    done = jstools.tsc("-p", str(installed / "tsconfig.json"), cwd=installed)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_types_catch_a_wrong_error_code(installed: Path) -> None:
    """The control: the declarations are strict enough to refuse a code that does not exist."""
    wrong = CONSUMER.replace("case 'Rollback':", "case 'RolledBack':")
    (installed / "consumer.ts").write_text(wrong)
    done = jstools.tsc("-p", str(installed / "tsconfig.json"), cwd=installed)
    assert done.returncode != 0 and "RolledBack" in done.stdout


def test_the_js_type_checks() -> None:
    """`tsc --checkJs --noEmit` over every shipped and test .js/.mjs (the lint step)."""
    done = jstools.tsc("-p", str(jstools.TSCONFIG))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_loader_type_checks_strict() -> None:
    """`strict` holds for the loader's own files (crates/wasm/js), the lint's second pass."""
    done = jstools.tsc("-p", str(jstools.STRICT_TSCONFIG))
    assert done.returncode == 0, done.stdout + done.stderr


def test_strict_covers_every_loader_file() -> None:
    """The strict pass names the loader's folder, so a new file there is checked too."""
    strict = json.loads(jstools.STRICT_TSCONFIG.read_text())
    assert strict["compilerOptions"]["strict"] is True
    assert "../../crates/wasm/js/**/*.js" in strict["include"]
