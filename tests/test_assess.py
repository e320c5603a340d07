"""`ember assess`: the source's example recomputed exactly, bad input named, the HTML report
rendered in a real headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ember.assess import build_report, load_scenario, render_html, sensitivity
from ember.assess.model import DIMENSIONS
from ember.errors import UserError

from .conftest import ember

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "examples" / "assess" / "source-guide.toml"
ARTIFACTS = ROOT / "test-artifacts"


def one_candidate(name: str, costs: str, header: str = "") -> str:
    """A scenario of one candidate "A" scoring 1 on every dimension, with these costs (TOML)."""
    fit = "".join(f"{dimension} = 1\n" for dimension in DIMENSIONS)
    return (
        f'name = "{name}"\n{header}[[candidates]]\nname = "A"\n[candidates.fit]\n{fit}'
        f"[candidates.costs]\n{costs}"
    )


@pytest.fixture(scope="module")
def report() -> dict:  # type: ignore[type-arg]
    return build_report(load_scenario(SOURCE))


def by_name(report: dict, name: str) -> dict:  # type: ignore[type-arg]
    return next(c for c in report["candidates"] if c["name"] == name)


def test_fit_totals_match_the_source(report: dict) -> None:  # type: ignore[type-arg]
    spark = by_name(report, "Spark (hosted)")["fit"]
    assert spark["weighted_total"] == pytest.approx(22.95)
    assert spark["unweighted_total"] == pytest.approx(23.0)
    assert spark["verdict"] == "hosted platform first"
    claude = by_name(report, "Claude agent")["fit"]
    assert claude["unweighted_total"] == pytest.approx(20.4)
    assert claude["verdict"] == "pilot first (evaluate carefully)"
    assert "6 x weighted mean" in report["fit_rule"]


def test_tco_recomputes_the_items_and_flags_the_stated_totals(report: dict) -> None:  # type: ignore[type-arg]
    expected = {
        "Spark (hosted)": (1_017_000, 324_000),
        "Claude agent": (725_400, 228_000),
        "Self-hosted Qwen": (441_400, 282_000),
    }
    for name, (total, stated) in expected.items():
        tco = by_name(report, name)["tco"]
        assert tco["total"] == pytest.approx(total)
        assert tco["consistent"] is False
        assert f"stated total {stated:,} does not follow from the items" in tco["note"]
    derived = by_name(report, "Spark API at 0.35 per M tokens")["tco"]
    assert derived["api_monthly"] == pytest.approx(63.0)
    assert (
        "5,000 requests/day x 1,200 tokens / 1e6 x 0.35 per M tokens x 30 days = 63.00"
        in (derived["lines"][0]["formula"])
    )
    assert derived["consistent"] is None


def test_growth_compounds_month_by_month(tmp_path: Path) -> None:
    scenario = tmp_path / "g.toml"
    scenario.write_text(
        one_candidate(
            "growth",
            "api_monthly = 100\ngrowth_monthly = 0.10\ninfrastructure_monthly = 0\n"
            "operations_monthly = 0\ncompliance_yearly = 0\nbuild_one_off = 0\n"
            "stated_total = 2138.43\n",
            header="horizon_years = 1\n",
        )
    )
    result = build_report(load_scenario(scenario))["candidates"][0]
    assert result["tco_monthly"][:3] == [100.0, 110.0, 121.0]
    assert result["tco"]["total"] == pytest.approx(sum(100 * 1.1**m for m in range(12)), abs=0.01)
    assert result["tco"]["consistent"] is True
    assert result["fit"]["verdict"] == "self-host"


def test_risk_bands(report: dict) -> None:  # type: ignore[type-arg]
    risks = by_name(report, "Spark (hosted)")["risks"]
    assert {
        r: v["band"]
        for r, v in risks.items()
        if r
        in (
            "vendor_lock_in",
            "compliance_failure",
            "tech_debt",
            "fault_diagnosis",
            "talent_scarcity",
            "innovation_constraint",
        )
    } == {
        "vendor_lock_in": "red",
        "compliance_failure": "red",
        "tech_debt": "amber",
        "fault_diagnosis": "amber",
        "talent_scarcity": "green",
        "innovation_constraint": "green",
    }


def test_sensitivity_names_the_smallest_flip() -> None:
    scenario = load_scenario(SOURCE)
    flip = sensitivity(scenario, scenario.candidates[0])
    assert flip is not None
    assert flip["dimension"] == "tool_standardisation"  # the heaviest weight moves least
    assert flip["new_verdict"].startswith("pilot first")
    assert flip["to"] == pytest.approx(4.5 - 0.95 / (6 * 0.25), abs=1e-3)


BASE = one_candidate(
    "bad",
    "api_monthly = 1\ninfrastructure_monthly = 0\noperations_monthly = 0\n"
    "compliance_yearly = 0\nbuild_one_off = 0\n",
)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("team_stack = 1\n", ""),
            "missing required field `team_stack` - at `$.candidates[0].fit`",
        ),
        (
            ("task_atomicity = 1", "task_atomicity = 7"),
            "<= 5.0 - at `$.candidates[0].fit.task_atomicity`",
        ),
        (
            ("operations_monthly = 0", "operations_monthly = -5"),
            ">= 0.0 - at `$.candidates[0].costs.operations_monthly`",
        ),
        (
            ("build_one_off = 0\n", "build_one_off = 0\n[candidates.risks]\nvendor_lokin = 3\n"),
            "candidates[0] ('A').risks: unknown risk 'vendor_lokin'",
        ),
        (("api_monthly = 1\n", ""), "give api_monthly, or all of requests_per_day"),
        (('name = "bad"', 'name = "bad"\nweights = { team_stack = 0.5 }'), "weights add up to 1.4"),
    ],
)
def test_bad_input_names_the_field(tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    path = tmp_path / "bad.toml"
    assert edit[0] in BASE
    path.write_text(BASE.replace(*edit, 1))
    with pytest.raises(UserError) as caught:
        load_scenario(path)
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_cli_json_and_files(tmp_path: Path) -> None:
    html, png = tmp_path / "r.html", tmp_path / "h.png"
    done = ember(
        dict(os.environ),
        "assess",
        str(SOURCE),
        "--json",
        "--html",
        str(html),
        "--png",
        str(png),
        "--svg",
        str(tmp_path / "h.svg"),
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [round(c["tco"]["total"]) for c in out["candidates"][:3]] == [1017000, 725400, 441400]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "h.svg").read_text().lstrip().startswith("<?xml")
    assert "<svg" in html.read_text()
    bad = ember(dict(os.environ), "assess", str(tmp_path / "none.toml"))
    assert bad.returncode == 2
    assert "cannot read" in bad.stderr


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    _chromium() is None, reason="no chromium: `apt-get install chromium` (.ci/run does)"
)
def test_html_report_renders_the_heatmap_in_headless_chromium(report: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    from matplotlib import image

    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "assess-report.png"
    shot.unlink(missing_ok=True)
    subprocess.run(
        [
            _chromium() or "",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1200,2600",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    pixels = image.imread(shot)[:, :, :3]

    def count(rgb: tuple[int, int, int]) -> int:
        target = [c / 255 for c in rgb]
        close = abs(pixels - target).max(axis=2) < 0.06
        return int(close.sum())

    assert count((0xD7, 0x30, 0x1F)) > 2000  # red cells of the heatmap were drawn
    assert count((0xF0, 0xA2, 0x02)) > 2000  # amber
    assert count((0x2C, 0xA2, 0x5F)) > 2000  # green
