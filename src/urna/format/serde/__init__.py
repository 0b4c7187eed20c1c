"""serde_json 1.0.151 in Python, one job per module (the public API is ``format.json_text``).

``schema`` (what serde derive asks for), ``numbers`` (serde's f64 conversion and float text),
``rust_debug`` (Rust ``{:?}`` of a str, for error texts), ``reader`` (the byte-by-byte
Deserializer), ``typed`` (derived-struct reads on top of it), ``parse`` (``from_slice`` with a
fast path through the C scanner), ``writer`` (the compact formatter).
"""
