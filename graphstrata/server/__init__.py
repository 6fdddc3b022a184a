"""The HTTP API (FastAPI): `graphstrata serve`, or `uvicorn --factory graphstrata.server:create_app`."""

from graphstrata.server.app import InsecureBind, create_app

__all__ = ["InsecureBind", "create_app"]
