"""The conductors' long operations, one task each (as Nova's
``conductor/tasks``): the RPC endpoints only make a task and run it."""
