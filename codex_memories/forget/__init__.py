"""Forget: the seven forgetting routes (spec section 6) and their audit rows."""
