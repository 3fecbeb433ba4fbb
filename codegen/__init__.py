"""metalog's code generator: the message definitions (``metalog.codec.definitions``) in, the codec's generated
modules out: ``pure`` writes one straight-line Python module per message (``src/metalog/codec/messages/``),
``compiled`` one Cython module of readers per message (``src/metalog/codec/compiled/*.pyx``).

A build tool of this repository, apart from the runtime as kio keeps its ``codegen/``: it is not installed with
metalog, and the import contract ``codegen-apart`` in pyproject.toml keeps ``metalog.*`` from importing it. Its
output is committed (a clone builds without running it); ``tests/codec/test_generator.py`` fails when that output
is stale. Run it from the repository's root: ``python -m codegen``, then ``pip install -e .`` to build the
compiled readers.
"""
