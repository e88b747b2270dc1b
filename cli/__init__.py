"""The `kirin` command line: one parser home (`main`) and one module per command group (`blender_jobs`,
`library`, `serve`, and `model_commands`, `pose_commands`, which need torch)."""
