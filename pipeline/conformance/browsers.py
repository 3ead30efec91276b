"""The three browser engines as a table: how to start each headless, and its version.

Each gets a fresh profile folder (and HOME) of its own, nothing persists between runs, and
nothing talks to the network beyond 127.0.0.1: Chromium by flags, Firefox by a user.js, and
WebKitGTK's MiniBrowser (which has no headless mode) runs on a private virtual X display.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pipeline.errors import TabledError
from pipeline.io import process
from pipeline.io.process import CommandTimedOut, CommandUnstartable


class EngineUnavailable(TabledError):
    """An engine the matrix was asked for is unknown or not installed."""

    table: ClassVar[Mapping[str, str]] = {
        "conformance.unknown-engine": (
            "choose engines from chromium, firefox, webkit, node and native"
        ),
        "conformance.engine-not-installed": (
            ".ci/run installs chromium, firefox-esr, webkit2gtk-driver and xvfb from Debian"
        ),
    }


# Chromium as root needs --no-sandbox; the rest stops first-run and background traffic.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-default-browser-check",
)
# Firefox: no first-run pages, updates, telemetry, studies, safe-browsing or captive-portal
# probes; the only network it sees is the harness on 127.0.0.1.
FIREFOX_PREFS: dict[str, bool | int | str] = {
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.startup.page": 0,
    "browser.aboutwelcome.enabled": False,
    "browser.newtabpage.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.enabled": False,
    "toolkit.telemetry.unified": False,
    "app.update.enabled": False,
    "app.update.auto": False,
    "app.normandy.enabled": False,
    "extensions.update.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "network.dns.disablePrefetch": True,
    "network.proxy.type": 0,
}
MINIBROWSER_GLOB = "/usr/lib/*-linux-gnu/webkit2gtk-4.*/MiniBrowser"


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]


@dataclass(frozen=True)
class Browser:
    name: str  # the engine's name in reports and on the command line
    family: str  # the JavaScript engine, for people
    executable: Callable[[], str | None]
    launch: Callable[[str, str, Path], Launch]  # (executable, url, profile) -> argv, env
    version: Callable[[str], list[str]]  # executable -> argv printing the version


def _base_env(profile: Path) -> dict[str, str]:
    home = profile / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(profile),
        # the browser's own folders inside its throw-away profile: set for the child, not
        # looked up for us (our per-user folders come from platformdirs)
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "LANG": "C.UTF-8",
    }


def _chromium(exe: str, url: str, profile: Path) -> Launch:
    return Launch(
        [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile / 'chromium'}", url], _base_env(profile)
    )


def _firefox(exe: str, url: str, profile: Path) -> Launch:
    folder = profile / "firefox"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f'user_pref("{k}", {_pref(v)});' for k, v in FIREFOX_PREFS.items()]
    (folder / "user.js").write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {**_base_env(profile), "MOZ_CRASHREPORTER_DISABLE": "1"}
    return Launch([exe, "--headless", "--no-remote", "--profile", str(folder), url], env)


def _pref(value: bool | int | str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int) else f'"{value}"'


def _webkit(exe: str, url: str, profile: Path) -> Launch:
    # -a: the first free display number; MiniBrowser --private keeps no data on disk.
    # WebKitGTK 2.50 reports crossOriginIsolated on a COOP/COEP page but exposes no
    # SharedArrayBuffer (and cannot post a shared WebAssembly.Memory) unless JavaScriptCore's
    # useSharedArrayBuffer option is on, as Safari has it; without it the threads lane is
    # refused and the page falls back to simd128.
    env = {**_base_env(profile), "JSC_useSharedArrayBuffer": "1"}
    return Launch(["xvfb-run", "-a", exe, "--private", url], env)


def _minibrowser() -> str | None:
    found = sorted(str(p) for p in Path("/").glob(MINIBROWSER_GLOB.lstrip("/")))
    return found[-1] if found and shutil.which("xvfb-run") else None


BROWSERS: dict[str, Browser] = {
    b.name: b
    for b in (
        Browser(
            "chromium",
            "V8",
            lambda: shutil.which("chromium"),
            _chromium,
            lambda exe: [exe, "--version"],
        ),
        Browser(
            "firefox",
            "SpiderMonkey",
            lambda: shutil.which("firefox-esr"),
            _firefox,
            lambda exe: [exe, "--version"],
        ),
        Browser(
            "webkit",
            "JavaScriptCore",
            _minibrowser,
            _webkit,
            lambda exe: ["xvfb-run", "-a", exe, "--version"],
        ),
    )
}


def browser(name: str) -> Browser:
    try:
        return BROWSERS[name]
    except KeyError:
        raise EngineUnavailable(
            f"unknown engine {name!r}",
            where="--engines",
            hint=f"choose from {', '.join(BROWSERS)}",
            error_id="conformance.unknown-engine",
        ) from None


def browser_version(b: Browser, exe: str, profile: Path) -> str:
    try:
        done = process.run(b.version(exe), timeout=60, env=_base_env(profile))
    except (CommandUnstartable, CommandTimedOut) as exc:
        return f"unknown ({exc.caught})"
    for line in (done.stdout + "\n" + done.stderr).splitlines():
        if any(ch.isdigit() for ch in line) and "WARNING" not in line and "[:" not in line:
            return line.strip()
    return "unknown"
