"""Adapters for agent frameworks (optional extras): ``urna.integrations.langchain``
(``urna[langchain]``) and ``urna.integrations.llama_index`` (``urna[llama-index]``).

Both answer a question exactly as ``urna retrieve`` does, through
:func:`urna.forge.query.ask`, and carry each hit's citation in its metadata.
"""
