"""codexmem: git-native memory and record channels for coding agents."""

__version__ = "0.1.0"
