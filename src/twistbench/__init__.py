"""twistbench: TWIST and TIAP evaluation of conversational memory systems."""

__version__ = "0.1.0"
