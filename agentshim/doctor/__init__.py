"""What ``agentshim doctor`` ships with: the pinned CLIs and the offline model server.

:mod:`~agentshim.doctor.clis` finds and installs each provider's pinned CLI
(``cli_versions.json``), :mod:`~agentshim.doctor.node_runtime` checks the Node.js they need,
:mod:`~agentshim.doctor.model_server` is a scripted model API server, and
:mod:`~agentshim.doctor.offline` points a real CLI at it. Test suites use them too, through
these paths.
"""

from __future__ import annotations
