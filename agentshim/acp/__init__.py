"""One client for the Agent Client Protocol (ACP), below the providers that speak it.

ACP is JSON-RPC 2.0, one object per line on a CLI's stdin and stdout. :mod:`.jsonrpc` builds
and reads the messages, :mod:`.updates` turns ``session/update`` notifications into the
library's events, :mod:`.dialect` is the small set of named switches in which the agents that
speak it differ, and :mod:`.client` is the long-lived transport that runs every turn of a
conversation on one process. A provider supplies its :class:`~.dialect.AcpDialect`; nothing
here knows a provider by name. See docs/acp.md.
"""

from __future__ import annotations
