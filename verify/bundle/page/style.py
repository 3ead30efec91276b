"""The page's style sheet (a constant: the CSP allows exactly its hash) and that CSP."""

from __future__ import annotations

import base64
import hashlib

CSS = """
:root{color-scheme:light dark;--fg:#1b1f24;--bg:#fff;--muted:#57606a;--line:#d0d7de;
--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--bar:#0969da;--head:#f6f8fa}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#8d96a0;
--line:#30363d;--ok:#3fb950;--bad:#f85149;--warn:#d29922;--bar:#4493f8;--head:#161b22}}
body{font:14px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg);
margin:0 auto;max-width:1200px;padding:16px 24px}
h1{font-size:24px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;
border-bottom:1px solid var(--line)}h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;width:100%}
th,td{border:1px solid var(--line);padding:3px 6px;text-align:left;vertical-align:top}
th{background:var(--head)}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,monospace;overflow-wrap:anywhere}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
.pass{color:var(--ok)}.fail{color:var(--bad)}.not-run,.absent{color:var(--warn)}
.muted{color:var(--muted)}.changed{font-weight:600}
svg.chart{max-width:100%;height:auto}svg.chart text{font:12px system-ui,sans-serif;
fill:var(--fg)}svg.chart rect.bar{fill:var(--bar)}
svg.chart rect.seg{stroke:var(--bg);stroke-width:.5}.seg-weights{fill:#4e79a7}
.seg-metadata{fill:#f28e2b}.seg-tokenizer{fill:#e15759}.seg-kv{fill:#76b7b2}
.seg-activations{fill:#59a14f}.seg-logits{fill:#edc948}.seg-decode_scratch{fill:#b07aa1}
.seg-stacks_tls{fill:#ff9da7}.seg-transfer{fill:#9c755f}.seg-load_copy{fill:#bab0ac}
.seg-allocator{fill:#d37295}.plan{display:grid;grid-template-columns:minmax(0,780px) 1fr;
gap:8px 16px;align-items:start}@media (max-width:1100px){.plan{grid-template-columns:1fr}}
details{margin:4px 0 12px}summary{cursor:pointer;color:var(--muted)}
nav ul{display:flex;flex-wrap:wrap;gap:4px 14px;padding:0;list-style:none}
@media print{body{max-width:none;padding:0;font-size:11px}nav{display:none}
details>*{display:block}h2{break-after:avoid}table{break-inside:auto}tr{break-inside:avoid}
:root{--fg:#000;--bg:#fff;--muted:#444;--line:#999;--bar:#333;--head:#eee}}
"""


def style_hash(css: str = CSS) -> str:
    """The CSP source for an inline style sheet: 'sha256-<base64 of its UTF-8 bytes' SHA-256>'."""
    digest = hashlib.sha256(css.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


# No script, no request: nothing may load; the one style sheet is allowed by its hash.
CSP = (
    f"default-src 'none'; style-src {style_hash()}; img-src 'none'; script-src 'none'; "
    "base-uri 'none'; form-action 'none'"
)
