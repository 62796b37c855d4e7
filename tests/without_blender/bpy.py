"""Put first on the path by conftest.py when the run excludes the ``blender`` marker (``make check``):
a test that reaches Blender without being marked fails here instead of slowing the fast tier."""

raise ImportError("this run excludes Blender (make check), but the test reached bpy: mark it "
                  "@pytest.mark.blender (docs/architecture.md, 'Tests')")
