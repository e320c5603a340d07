"""Schemathesis against `/openapi.json` of a real `ember serve`: every operation, with
generated valid (positive) and invalid (negative) input, answers no 500, only documented
status codes and content types, and bodies that fit the document's schemas."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason='ember serve needs the server extra: pip install ".[dev]"')
pytest.importorskip("schemathesis", reason='the fuzzing test needs schemathesis: ".[dev]"')

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from .console.support import bearer, serve_child

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES = 25  # per operation and mode: ~30 s in all on two cores


def test_the_api_keeps_to_its_openapi_document(tmp_path: Path, ember_env: dict[str, str]) -> None:
    from .conftest import ember

    auth = bearer(ember(ember_env, "tokens", "create", "fuzzer").stdout.strip())
    limits = "rate_per_s = 100000.0\nrate_burst = 100000\nmax_body_bytes = 4096\n"
    with serve_child(tmp_path, ember_env, server_toml=limits) as base:
        schema = schemathesis.openapi.from_url(base + "/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 18
        for operation, mode in itertools.product(operations, GenerationMode):

            @given(case=operation.as_strategy(mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def keeps_to_it(case: schemathesis.Case) -> None:
                case.call_and_validate(base_url=base, headers=auth, checks=CHECKS, timeout=20)

            try:
                keeps_to_it()
            except Unsatisfiable:  # no input to get wrong (no parameter, no body)
                assert mode is GenerationMode.NEGATIVE
