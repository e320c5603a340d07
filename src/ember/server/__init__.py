"""Server: `ember serve`, the HTTP API over one Runtime; its runs' L1-L4 as metrics, spans."""

from ember.server.app import create_app, serve

__all__ = ["create_app", "serve"]
