"""Mesh binding: template skeletons, skin weights by bone heat, and skin weight transfer between meshes."""
