"""The template fit of Auto-Bind (torch)."""
