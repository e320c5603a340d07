"""The embedded planner: prompt and grammar (pure), the stream parser, the model file, and one
end-to-end run on the real shipped model."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ember.errors import ModelError
from ember.planner.llama import StepStreamParser
from ember.planner.models import SHIPPED_MODELS, ShippedModel, _assemble, resolve_model
from ember.planner.plan import Step
from ember.planner.prompt import build_grammar, build_prefix, build_request, signature
from ember.tools.demo import demo_catalog

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None
CATALOGUE = tuple(demo_catalog())


def test_prompt_puts_the_catalogue_first_and_the_request_last() -> None:
    prefix = build_prefix(CATALOGUE)
    assert prefix.startswith("<|im_start|>system\n")
    assert signature(CATALOGUE[0]) in prefix
    assert (
        "search_hotels(city: string, check_in: date, nights: integer, "
        "max_price_per_night?: number) -> {hotels}" in prefix
    )
    request = build_request("Weather in Oslo?", __import__("datetime").date(2026, 3, 2))
    assert request.startswith("Today: 2026-03-02 (Monday). Request: Weather in Oslo?")
    assert build_prefix(CATALOGUE) == prefix  # stable, so its KV cache can be reused


@pytest.mark.skipif(not HAS_LLAMA, reason="llama-cpp-python is not installed (extra: embedded)")
def test_grammar_compiles_in_llama_cpp() -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    grammar = build_grammar(CATALOGUE)
    for tool in CATALOGUE:
        assert f'\\"tool\\":\\"{tool.tool_name}\\"' in grammar
    LlamaGrammar.from_string(grammar, verbose=False)


def test_stream_parser_yields_each_step_when_it_closes() -> None:
    text = (
        '{"steps":[{"id":1,"tool":"get_weather","args":{"city":"Par}is {x}","date":"2026-03-03"}},'
        ' {"id":2,"tool":"send_email","args":{"to":"a@b.co","subject":"s","body":"{$1.forecast}"'
        '},"after":[1]}]}'
    )
    parser = StepStreamParser()
    seen: list[tuple[int, list[Step]]] = []
    for index in range(0, len(text), 7):
        steps = parser.feed(text[index : index + 7])
        if steps:
            seen.append((index, steps))
    assert [s.id for _, batch in seen for s in batch] == [1, 2]
    assert seen[0][1][0].args == {"city": "Par}is {x}", "date": "2026-03-03"}
    assert seen[0][0] < len(text) // 2  # step 1 came out long before the plan ended
    assert seen[1][1][0].after == [1]


def test_model_paths_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="neither a shipped model"):
        resolve_model(str(tmp_path / "missing.gguf"))
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"NOPE")
    with pytest.raises(ModelError, match="lacks the GGUF magic"):
        resolve_model(str(fake))
    real = tmp_path / "tiny.gguf"
    real.write_bytes(b"GGUF\x03\x00")
    assert resolve_model(str(real)) == real


def test_assembly_verifies_the_checksum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for index in (1, 2):
        package = tmp_path / "site" / f"ember_fake_part{index}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{index:02d}.bin").write_bytes(b"GGUF" if index == 1 else b"data")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("EMBER_MODEL_DIR", str(tmp_path / "cache"))
    import hashlib

    good = ShippedModel(
        "fake",
        "fake.gguf",
        ("ember_fake_part1", "ember_fake_part2"),
        8,
        hashlib.sha256(b"GGUFdata").hexdigest(),
        "none",
    )
    assert _assemble(good).read_bytes() == b"GGUFdata"
    bad = ShippedModel("bad", "bad.gguf", good.packages, 8, "0" * 64, "none")
    with pytest.raises(ModelError, match="has SHA-256 .* expected 0000"):
        _assemble(bad)
    assert not (tmp_path / "cache" / "models" / "bad.gguf").exists()
    missing = ShippedModel("gone", "gone.gguf", ("ember_no_such_part",), 1, "0" * 64, "none")
    with pytest.raises(ModelError, match="needs the package 'ember-no-such-part'"):
        _assemble(missing)


def _model_available() -> str | None:
    if not HAS_LLAMA:
        return "llama-cpp-python is not installed: pip install -e '.[embedded]'"
    try:
        SHIPPED_MODELS["qwen2.5-coder-0.5b"].part_paths()
    except ModelError as exc:
        return str(exc)
    return None


@pytest.mark.model
@pytest.mark.skipif(_model_available() is not None, reason=str(_model_available()))
def test_embedded_model_answers_a_single_tool_request(ember_env: dict[str, str]) -> None:
    """The README's first command, for real: the shipped model plans, the demo tool runs."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ember.cli",
            "run",
            "--json",
            "What's the weather in Tokyo on 2026-03-03?",
        ],
        env=ember_env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "succeeded"
    assert [(s["tool"], s["args"]) for s in out["steps"]] == [
        ("get_weather", {"city": "Tokyo", "date": "2026-03-03"})
    ]
    assert out["steps"][0]["result"]["city"] == "Tokyo"
    latency = out["latency_ms"]  # measured, not judged: speed is for benchmarks/
    assert latency["l1_ttft"] > 0
    assert latency["l1_plan"] >= latency["l1_ttft"]
