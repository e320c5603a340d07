"""The demo tool pack that `ember run` uses by default."""

from ember.tools.demo.pack import DemoWorld, demo_catalog, demo_registry

__all__ = ["DemoWorld", "demo_catalog", "demo_registry"]
