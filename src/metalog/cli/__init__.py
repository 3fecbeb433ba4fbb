"""The ``metalog`` command line: argument parsing and printing only, no logic of its own."""
