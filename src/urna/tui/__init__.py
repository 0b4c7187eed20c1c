"""``urna tui``: a terminal corpus explorer (home, corpus, ask, health tabs).

Needs the optional extra ``urna[tui]`` (textual). Importing this package does not import
textual; :mod:`urna.tui.app` does.
"""
