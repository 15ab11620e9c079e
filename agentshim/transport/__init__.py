"""What every long-lived transport shares, below the providers that speak a protocol over it.

A long-lived transport keeps one CLI process per conversation (or shares one between
several) and talks to it in JSON lines both ways. The pieces here know no provider: :mod:`.ndjson` is the one encoder of what goes
to a CLI's stdin, :mod:`.correlator` pairs requests with their responses under deadlines,
:mod:`.watch` is the pure clock of a turn (its budget, its stall window, the grace of an
interrupt), :mod:`.approvals` runs the caller's approval handler fail-closed, :mod:`.channel`
is the thin shell over a :class:`~agentshim.execution.process.Process` that reads on the
turn's thread and wakes it from any other, :mod:`.context` is what a provider's plugin
gets to build its transport, and :mod:`.conversation` is the skeleton every conversation on
one process shares (one turn at a time, the read loop and its deadlines, the in-band
interrupt, closing). :mod:`.router` reads one process for several conversations, on the
thread of whichever is waiting, and :mod:`.shared` keeps the processes conversations share
(and the warm ones). Nothing here starts a thread.
"""

from __future__ import annotations
