"""Negotiation market: bargaining between software agents, from two traders to thousands.

Layers as folders, bottom to top, each importing only the layers below it:
``tests/test_layers.py`` holds the table and enforces it, and
``docs/pages/architecture.md`` draws it (checked against the test).

Data flows protocol -> negotiation record -> model metrics -> plots and files.
"""
