"""verl tools backed by a running ``swerve serve`` (see docs/serve.md)."""
