"""``urna serve``: an HTTP API and a web page over one or more .urna files (optional extra).

``corpora`` holds the request semantics and needs no web framework; ``app`` builds the
Starlette app and runs it with uvicorn (``pip install 'urna[serve]'``). Importing this
package imports neither.
"""
