"""Memory layer: repository discovery and scope identity for stored records."""
