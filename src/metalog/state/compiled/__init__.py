"""metalog's compiled state twins (part of the log core: registered by ``metalog.state.loader``), hand-written
Cython built at install where a C compiler is present.

- ``loader``: ``MetadataLoader.replay_value``, replay's per-record dispatch (decode with the codec's readers, call
  the rule of ``metalog.state.rules``); the rules stay Python.
"""
