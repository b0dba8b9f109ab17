"""Text from a session as evidence, never an instruction: the screen every path shares (`screen`)."""
