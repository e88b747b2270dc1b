"""The `kirin` command line: one parser home (`main`), and the command groups that need torch."""
