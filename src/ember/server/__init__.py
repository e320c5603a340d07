"""`ember serve`: runs tasks over HTTP and exports the four latency layers (DESIGN.md `server/`)."""

from ember.server.app import create_app, serve

__all__ = ["create_app", "serve"]
