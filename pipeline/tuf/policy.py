"""repository.toml (the TUF repository policy, package data) as a frozen value, checked on load."""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, ValidationError

from pipeline.tuf.errors import PolicyInvalid

POLICY_FILE = Path(__file__).resolve().with_name("repository.toml")


class ExpiryDays(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    root: PositiveFloat
    targets: PositiveFloat
    snapshot: PositiveFloat
    timestamp: PositiveFloat


class RepositoryPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    target_prefix: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    expiry_days: ExpiryDays

    def expiry(self, role: str) -> timedelta:
        return timedelta(days=float(getattr(self.expiry_days, role)))

    def with_overrides(self, overrides: Sequence[str]) -> RepositoryPolicy:
        """Apply `ROLE=DAYS` overrides (from `--expiry`)."""
        days = self.expiry_days.model_dump()
        for item in overrides:
            role, sep, value = item.partition("=")
            if not sep or role not in days:
                raise PolicyInvalid(
                    f"--expiry {item!r}: expected ROLE=DAYS with ROLE one of {', '.join(days)}",
                    where="--expiry",
                )
            try:
                days[role] = float(value)
            except ValueError as exc:
                raise PolicyInvalid(f"--expiry {item!r}: DAYS is not a number") from exc
        try:
            return self.model_copy(update={"expiry_days": ExpiryDays(**days)})
        except ValidationError as exc:
            raise PolicyInvalid(f"--expiry: {exc.errors()[0]['msg']}", where="--expiry") from exc


def load_policy(path: Path = POLICY_FILE, overrides: Sequence[str] = ()) -> RepositoryPolicy:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        policy = RepositoryPolicy.model_validate(doc)
    except OSError as exc:
        raise PolicyInvalid(f"cannot read: {exc.strerror}", where=str(path)) from exc
    except tomllib.TOMLDecodeError as exc:
        raise PolicyInvalid(f"not valid TOML: {exc}", where=str(path)) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise PolicyInvalid(first["msg"], where=f"{path}: {field}") from exc
    return policy.with_overrides(overrides)
