"""verl tools backed by a running ``swerve serve`` (see README.md)."""
