"""The data models: records, the store config, channel schemas and their formulas."""
