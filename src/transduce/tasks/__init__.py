"""Tasks: what to train (model, batches, loss, validation); the engine says how."""
