"""Provider-agnostic values, protocols and helpers; nothing here knows a particular CLI."""

from __future__ import annotations
