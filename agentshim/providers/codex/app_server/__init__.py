"""Codex's long-lived ``codex app-server`` transport and its generated protocol.

Importing this package costs nothing: ``protocol.py`` (the generated types) is loaded only when
an app-server conversation opens.
"""

from __future__ import annotations
