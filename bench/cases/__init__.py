"""One module per measured area; each exposes ``async def run(lab, sizes) -> list[Figure]``."""
