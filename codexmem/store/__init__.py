"""The git-native store: files are the truth, the index is derived."""
