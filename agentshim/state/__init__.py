"""State kept between turns: checkpoint stores and the leases that serialize a conversation's turns.

The values and protocols they implement are here too (``Checkpoint``, ``CheckpointStore``,
``ConversationLeases``); the file, SQLite and PostgreSQL stores and the in-process leases are
the implementations. Everything here imports only :mod:`agentshim.core`.
"""

from __future__ import annotations
