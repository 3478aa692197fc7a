"""Model-training helpers shared by attacks and utility tasks (they must not import each other)."""
