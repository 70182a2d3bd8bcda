"""The conformance run: every shipped module's cassette replayed through every runtime
(test_conformance.py), the runtimes as their users drive them (_runtimes.py), the table
(table.py) and the recorder of the cassettes (record.py, ``make cassettes``)."""
