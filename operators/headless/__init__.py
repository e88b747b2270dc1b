"""Headless jobs for the `kirin` command line, run through the operators a user clicks: one module per job."""
