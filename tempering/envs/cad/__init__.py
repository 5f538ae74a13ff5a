"""CAD/3D domain: build parts from drawings with a script, graded by measured geometry.

    envs.make("cad/parts-v1")                       tcad scripts, manifold3d kernel in the sandbox
"""
