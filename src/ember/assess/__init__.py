"""`ember assess`: fit score, total cost of ownership and risk heatmap for choosing between
hosted and self-hosted agent platforms, with the arithmetic shown."""

from ember.assess.compute import fit, risk_band, sensitivity, tco, verdict
from ember.assess.model import Scenario, load_scenario
from ember.assess.report import build_report, heatmap, render_html, render_terminal

__all__ = [
    "Scenario",
    "build_report",
    "fit",
    "heatmap",
    "load_scenario",
    "render_html",
    "render_terminal",
    "risk_band",
    "sensitivity",
    "tco",
    "verdict",
]
