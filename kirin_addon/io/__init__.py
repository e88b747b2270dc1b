"""Reading and writing motion files: BVH, glTF and Kirin clip files, behind one entry point."""
