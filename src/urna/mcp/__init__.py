"""The MCP server of ``urna mcp`` (extra ``urna[mcp]``): tools and citation resources.

:func:`urna.mcp.server.build_server` exposes open corpora to an agent: ``search`` answers as
``urna retrieve`` does, ``cite`` resolves a citation to its text and verifying hashes,
``inspect`` and ``list_corpora`` describe the files; every ``urna://`` citation is also a
resource. Transports (stdio, streamable HTTP) are chosen by the CLI.
"""
