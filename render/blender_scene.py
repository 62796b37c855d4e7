"""Build the 3DIdent scene in code with bpy and render single images into it.

Scene values follow docs/facts.md ("Scene") (the original CLEVR-derived scene read in current
Blender). Only ``apply`` changes between images: object transform, spot position, the colours and,
for variants with object classes, which shape is visible (shapes are built on first use).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ident3d.extras import require
from ident3d.render.settings import RenderSettings
from ident3d.render.shapes import SMOOTH, normalise, shape_mesh
from ident3d.render.teapot import OBJECT_SCALE
from ident3d.scene import GROUND_Z

CAMERA_LOCATION = (8.0, 0.0, 8.0)
SUN = {"location": (0.0, 0.0, 25.8), "energy": 0.5, "angle_deg": 11.42}
AREA = {"location": (0.0, 0.0, 7.0), "energy": 39.27, "size": 1.0}
SPOT = {"energy": 3000.0, "radius": 0.5, "cone_deg": 35.0, "blend": 0.1}
GROUND_SIZE = 1500.0
GLOSSY_GREY = 0.8


def _rubber_material(bpy, name: str):
    """Outer mix (Fresnel IOR 1.2) of an inner mix and a glossy layer; the inner mix (Fresnel IOR
    1.4) blends a Lambert diffuse and an Ashikhmin sheen of the colour. Returns (material, rgb node).
    """
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    nodes.clear()
    out = nodes.new("ShaderNodeOutputMaterial")
    rgb = nodes.new("ShaderNodeRGB")
    rgb.name = "colour"
    diffuse = nodes.new("ShaderNodeBsdfDiffuse")
    sheen = nodes.new("ShaderNodeBsdfSheen")
    sheen.distribution = "ASHIKHMIN"
    sheen.inputs["Roughness"].default_value = 0.6
    glossy = nodes.new("ShaderNodeBsdfGlossy")
    glossy.distribution = "BECKMANN"
    glossy.inputs["Roughness"].default_value = 0.59
    glossy.inputs["Color"].default_value = (GLOSSY_GREY, GLOSSY_GREY, GLOSSY_GREY, 1.0)
    inner_fresnel, outer_fresnel = nodes.new("ShaderNodeFresnel"), nodes.new("ShaderNodeFresnel")
    inner_fresnel.inputs["IOR"].default_value = 1.4
    outer_fresnel.inputs["IOR"].default_value = 1.2
    inner, outer = nodes.new("ShaderNodeMixShader"), nodes.new("ShaderNodeMixShader")
    links.new(rgb.outputs[0], diffuse.inputs["Color"])
    links.new(rgb.outputs[0], sheen.inputs["Color"])
    links.new(inner_fresnel.outputs[0], inner.inputs[0])
    links.new(diffuse.outputs[0], inner.inputs[1])
    links.new(sheen.outputs[0], inner.inputs[2])
    links.new(outer_fresnel.outputs[0], outer.inputs[0])
    links.new(inner.outputs[0], outer.inputs[1])
    links.new(glossy.outputs[0], outer.inputs[2])
    links.new(outer.outputs[0], out.inputs["Surface"])
    return mat, rgb


def _light(bpy, name: str, kind: str, location, energy: float):
    data = bpy.data.lights.new(name, kind)
    data.energy = energy
    obj = bpy.data.objects.new(name, data)
    obj.location = location
    obj.visible_camera = False
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _track_to(obj, target) -> None:
    c = obj.constraints.new("TRACK_TO")
    c.target = target
    c.track_axis = "TRACK_NEGATIVE_Z"
    c.up_axis = "UP_Y"


NO_GPU = ("--device gpu: Cycles found no CUDA or OptiX device on this machine. "
          "Fix: run on a machine with an NVIDIA GPU, or use --device cpu.")


def gpu_backend(bpy) -> str | None:
    """Select the first Cycles GPU backend with a device (OptiX, then CUDA); None when there is none."""
    prefs = bpy.context.preferences.addons["cycles"].preferences
    for backend in ("OPTIX", "CUDA"):
        try:
            prefs.compute_device_type = backend
        except TypeError:
            continue
        prefs.refresh_devices()
        if any(d.type == backend for d in prefs.devices):
            for d in prefs.devices:
                d.use = d.type == backend
            return backend
    return None


def _configure_device(bpy, scene, device: str) -> None:
    if device == "cpu":
        scene.cycles.device = "CPU"
        return
    from ident3d.errors import RenderError

    if gpu_backend(bpy) is None:
        raise RenderError(NO_GPU)
    scene.cycles.device = "GPU"


class BlenderScene:
    """The 3DIdent scene, built once per process; ``render`` writes one PNG per call."""

    def __init__(self, settings: RenderSettings, threads: int | None = None) -> None:
        """``threads``: Cycles' threads in this process (None: one per CPU). Several workers on one
        machine each take their share: at 64 px, two workers of two threads on two cores render
        about a sixth slower than two of one thread (the same pixels either way)."""
        self.bpy = bpy = require("bpy")
        self.settings = settings
        bpy.ops.wm.read_factory_settings(use_empty=True)
        scene = bpy.context.scene
        self._configure_render(scene, settings)
        if threads is not None:
            scene.render.threads_mode, scene.render.threads = "FIXED", threads
        # Cycles keeps its session between renders instead of rebuilding it for every image (about 2
        # ms of a 64 px image's 20); only the parameters ``apply`` changes are synchronised again. The
        # pixels are bit-identical either way (tests/test_render.py).
        scene.render.use_persistent_data = True
        world = bpy.data.worlds.new("world")
        world.color = (0.0, 0.0, 0.0)
        if world.node_tree is None:
            world.use_nodes = True
        background = world.node_tree.nodes.get("Background")
        if background is not None:
            background.inputs["Strength"].default_value = 0.0
        scene.world = world

        origin = bpy.data.objects.new("origin", None)
        scene.collection.objects.link(origin)
        cam = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
        cam.data.lens, cam.data.sensor_width, cam.data.sensor_fit = 35.0, 50.0, "AUTO"
        cam.location = CAMERA_LOCATION
        _track_to(cam, origin)
        scene.collection.objects.link(cam)
        scene.camera = cam

        sun = _light(bpy, "sun", "SUN", SUN["location"], SUN["energy"])
        sun.data.angle = math.radians(SUN["angle_deg"])
        area = _light(bpy, "area", "AREA", AREA["location"], AREA["energy"])
        area.data.size = AREA["size"]

        self.objects: dict = {}
        self.teapot = self._shape_object("teapot")

        half = GROUND_SIZE / 2
        ground_mesh = bpy.data.meshes.new("ground")
        ground_mesh.from_pydata([(-half, -half, 0), (half, -half, 0), (half, half, 0),
                                 (-half, half, 0)], [], [[0, 1, 2, 3]])
        ground = bpy.data.objects.new("ground", ground_mesh)
        ground.location = (0.0, 0.0, GROUND_Z)
        scene.collection.objects.link(ground)

        self.object_material, self.teapot_rgb = _rubber_material(bpy, "teapot")
        ground_mat, self.ground_rgb = _rubber_material(bpy, "ground")
        self.teapot.data.materials.append(self.object_material)
        ground_mesh.materials.append(ground_mat)

        self.spot = _light(bpy, "spot", "SPOT", (0.0, 0.0, 0.0), SPOT["energy"])
        self.spot.data.shadow_soft_size = SPOT["radius"]
        self.spot.data.spot_size = math.radians(SPOT["cone_deg"])
        self.spot.data.spot_blend = SPOT["blend"]
        _track_to(self.spot, self.teapot)

    def _configure_render(self, scene, s: RenderSettings) -> None:
        scene.render.engine = s.engine
        scene.render.resolution_x = scene.render.resolution_y = s.resolution
        scene.render.resolution_percentage = 100
        scene.render.film_transparent = False
        scene.render.dither_intensity = 0.0
        scene.render.use_file_extension = False
        scene.render.image_settings.file_format = "PNG"
        scene.render.image_settings.color_mode = "RGB"
        scene.render.image_settings.color_depth = "8"
        scene.render.image_settings.compression = 15
        scene.view_settings.view_transform = "Standard"
        scene.view_settings.look = "None"
        scene.display_settings.display_device = "sRGB"
        c = scene.cycles
        c.samples = s.samples
        c.use_adaptive_sampling = False
        c.use_denoising = s.denoise
        if s.denoise:
            c.denoiser = "OPENIMAGEDENOISE"
            c.denoising_prefilter = s.denoise_prefilter.upper()
            c.denoising_quality = s.denoise_quality.upper()
        c.seed = s.cycles_seed
        c.max_bounces = 0
        c.diffuse_bounces = c.glossy_bounces = c.transmission_bounces = c.volume_bounces = 0
        c.transparent_max_bounces = 8
        c.blur_glossy = 2.0  # "filter glossy" in the UI
        c.pixel_filter_type = "BLACKMAN_HARRIS"
        c.filter_width = 1.5
        _configure_device(self.bpy, scene, s.device)

    def _shape_object(self, name: str):
        """The object of shape ``name``, built and linked on first use with the shared material."""
        if name in self.objects:
            return self.objects[name]
        bpy, bmesh = self.bpy, require("bmesh")
        mesh = bpy.data.meshes.new(name)
        if name == "monkey":  # Blender's Suzanne, normalised like every other shape
            bm = bmesh.new()
            bmesh.ops.create_monkey(bm)
            bm.to_mesh(mesh)
            bm.free()
            vertices = normalise(np.array([v.co for v in mesh.vertices]))
            mesh.vertices.foreach_set("co", vertices.ravel())
        else:
            vertices, faces = shape_mesh(name)
            mesh.from_pydata(vertices.tolist(), [], [list(f) for f in faces])
        if name in SMOOTH:
            mesh.shade_smooth()
        mesh.validate()
        obj = bpy.data.objects.new(name, mesh)
        obj.scale = (OBJECT_SCALE,) * 3
        obj.rotation_mode = "XYZ"
        self.bpy.context.scene.collection.objects.link(obj)
        bm = bmesh.new()
        bm.from_mesh(mesh)
        bmesh.ops.recalc_face_normals(bm, faces=bm.faces)
        bm.to_mesh(mesh)
        bm.free()
        if self.objects:  # the teapot gets its material in __init__, after the materials exist
            mesh.materials.append(self.object_material)
        self.objects[name] = obj
        return obj

    def apply(self, params: dict) -> None:
        """Set one image's scene parameters (a row of ``ident3d.scene.SceneParams``). The teapot is
        always placed (the spotlight aims at it), hidden when another shape is shown."""
        shown = self._shape_object(params.get("object_shape", "teapot"))
        for obj in self.objects.values():
            obj.location = params["object_location"]
            obj.rotation_euler = params["object_rotation"]
            if obj.hide_render != (obj is not shown):  # set even unchanged, it rebuilds the scene's graph
                obj.hide_render = obj is not shown
        self.spot.location = params["spot_location"]
        self.spot.data.color = params["spot_rgb"]
        self.teapot_rgb.outputs[0].default_value = (*params["object_rgb"], 1.0)
        self.ground_rgb.outputs[0].default_value = (*params["ground_rgb"], 1.0)

    def render(self, params: dict, path: Path) -> None:
        """Render one image to ``path`` (the caller makes the write atomic)."""
        self.apply(params)
        scene = self.bpy.context.scene
        scene.render.filepath = str(path)
        self.bpy.ops.render.render(write_still=True)
