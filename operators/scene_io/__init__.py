"""The one place that converts between bpy data and engine arrays: the readers and writers of the scene.

- `rig`: the armature an operator acts on, read as a Rig (and built from one), and its evaluated pose;
- `mesh`: meshes and their skin weights read (surfaces, vertex groups, a rig's skin) and written;
- `action`: Actions read into Motions and written from them (the one place that writes Actions);
- `pose`: the armature's current pose (the pose bones' channels), its selection, a key of it;
- `tracks`: a Movie Clip's tracks (Extract Motion From Video);
- `arrays`: the bulk reads they share (`foreach_get` into arrays).

Every bulk read and write goes through `foreach_get` / `foreach_set`. Bad input from the scene raises
`SceneError`; operators report its message and change nothing.
"""


class SceneError(ValueError):
    """Bad input from the scene; operators report the message and change nothing."""
