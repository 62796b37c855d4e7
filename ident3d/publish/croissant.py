"""The bundle's Croissant 1.1 JSON-LD (https://docs.mlcommons.org/croissant/docs/croissant-spec-1.1.html):
core fields, one ``cr:FileObject`` per Parquet shard with its sha256, a ``cr:FileSet`` the records are
read from, a ``cr:Split`` record set, and one record set of images with their latents (a 10-wide
array and one named field per factor) and captions; the responsible-AI fields (``rai:``) come from
the same facts as the dataset card."""

from __future__ import annotations

from typing import Any

from ident3d.publish.facts import CITATION, CREATOR, BundleFacts

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
CONTEXT: dict[str, Any] = {
    "@language": "en", "@vocab": "https://schema.org/", "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/",
    "arrayShape": "cr:arrayShape", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "containedIn": "cr:containedIn",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "description": {"@container": "@language"}, "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract", "field": "cr:field",
    "fileObject": "cr:fileObject", "fileProperty": "cr:fileProperty", "fileSet": "cr:fileSet",
    "format": "cr:format", "includes": "cr:includes", "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key", "md5": "cr:md5",
    "name": {"@container": "@language"}, "parentField": "cr:parentField", "path": "cr:path",
    "recordSet": "cr:recordSet", "references": "cr:references", "regex": "cr:regex",
    "repeated": "cr:repeated", "replace": "cr:replace", "samplingRate": "cr:samplingRate",
    "separator": "cr:separator", "source": "cr:source", "subField": "cr:subField",
    "transform": "cr:transform",
}
PARQUET = "application/x-parquet"
SHARDS = "parquet-shards"
SPLITS = "splits"
IMAGES = "images"
SHARD_SUFFIX = r"(?:-\d{5}-of-\d{5}\.parquet)?$"  # optional: the regex also meets its own result


def _column(name: str, data_type: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"@type": "cr:Field", "@id": f"{IMAGES}/{name}", "name": name, "description": description,
            "dataType": data_type, "source": {"fileSet": {"@id": SHARDS}, "extract": {"column": name}},
            **extra}


def _fields(facts: BundleFacts) -> list[dict[str, Any]]:
    k = facts.variant.n_latents
    names = ", ".join(facts.variant.names)
    split_pattern = "|".join(s.name for s in facts.splits)
    fields = [
        {"@type": "cr:Field", "@id": f"{IMAGES}/split", "name": "split", "dataType": "sc:Text",
         "description": "The split the image belongs to.",
         "references": {"field": {"@id": f"{SPLITS}/name"}},
         "source": {"fileSet": {"@id": SHARDS}, "extract": {"fileProperty": "fullpath"},
                    # mlcroissant applies the transform to the path, then again to its result
                    "transform": {"regex": f"^(?:.*/)?({split_pattern})" + SHARD_SUFFIX}}},
        {**_column("image", "sc:ImageObject", f"The rendered image, PNG, {facts.resolution} x "
                   f"{facts.resolution} px."),
         "source": {"fileSet": {"@id": SHARDS}, "extract": {"column": "image"},
                    "transform": {"jsonPath": "bytes"}}},
        _column("index", "sc:Integer", "The image's index in its split (its file name)."),
        _column("caption", "sc:Text", "A templated description of the scene, made from the latents."),
        _column("raw_latents", "sc:Float", f"The {k} latents u the image was rendered from ({names}); "
                "continuous latents in [-1, 1], class latents as class numbers.",
                isArray=True, arrayShape=str(k)),
        _column("latents", "sc:Float", f"The {k} scene quantities (positions in scene units, angles in "
                "radians, hues in turns).", isArray=True, arrayShape=str(k)),
    ]
    for f in facts.variant.factors:
        what = (f"class number of {', '.join(f'{i} = {c}' for i, c in enumerate(f.classes))}" if f.is_class
                else f"raw value u in [{f.low:g}, {f.high:g}]")
        fields.append(_column(f.name, "sc:Integer" if f.is_class else "sc:Float",
                              f"Latent {f.index}, {f.description} ({what}); it drives the "
                              f"{f.scene_quantity}."))
    return fields


def _rai(facts: BundleFacts) -> dict[str, Any]:
    return {
        "rai:dataCollection": (f"Rendered by {facts.renderer}: every latent is drawn from the variant's "
                               "distribution with a fixed seed and the image is rendered from it; no data "
                               "was collected from people or the world."),
        "rai:dataCollectionType": ["Synthetic data generation (rendering)"],
        "rai:dataCollectionMissingData": "None: every index has its image and latents (checked by sha256).",
        "rai:dataCollectionRawData": "The raw latents of each image are part of the dataset.",
        "rai:dataPreprocessingProtocol": ["None: PNGs are stored as rendered."],
        "rai:dataAnnotationProtocol": ("No annotation: the labels are the latents the images were "
                                       "rendered from, and the captions are generated from them."),
        "rai:dataUseCases": ["Measuring how well the generative factors can be read out of learned "
                             "representations (identifiability, disentanglement) in self-supervised "
                             "learning research."],
        "rai:dataBiases": ["The factor distribution is the one stated (uniform unless the variant has a "
                           "causal model); one object class unless the variant has several."],
        "rai:dataLimitations": facts.limitations,
        "rai:personalSensitiveInformation": "None: synthetic scenes of objects; no people, no personal data.",
        "rai:dataSocialImpact": ("Low: a research benchmark of rendered objects. Results on it do not "
                                 "transfer to claims about real-world data."),
        "rai:dataReleaseMaintenancePlan": ("A track's data never changes: any change to the variant, the "
                                           "render settings, the sizes or the seeds is a new track "
                                           "version; the sha256 of every shard is listed here."),
    }


def croissant(facts: BundleFacts) -> dict[str, Any]:
    """The Croissant 1.1 metadata of a bundle whose shards ``facts`` lists."""
    shards = [shard for split in facts.splits for shard in split.shards]
    distribution: list[dict[str, Any]] = [
        {"@type": "cr:FileObject", "@id": shard.path, "name": shard.path, "contentUrl": shard.path,
         "contentSize": f"{shard.n_bytes} B", "encodingFormat": PARQUET, "sha256": shard.sha256}
        for shard in shards]
    distribution.append({"@type": "cr:FileSet", "@id": SHARDS, "name": SHARDS,
                         "description": "Every Parquet shard of the bundle, one row per image.",
                         "encodingFormat": PARQUET, "includes": "data/*.parquet"})
    splits = {"@type": "cr:RecordSet", "@id": SPLITS, "name": SPLITS, "dataType": "cr:Split",
              "description": "The splits of the bundle.", "key": {"@id": f"{SPLITS}/name"},
              "field": [{"@type": "cr:Field", "@id": f"{SPLITS}/name", "name": "name",
                         "dataType": "sc:Text", "description": "The split's name."}],
              "data": [{f"{SPLITS}/name": s.name} for s in facts.splits]}
    images = {"@type": "cr:RecordSet", "@id": IMAGES, "name": IMAGES,
              "description": "One record per image: the image, its latents and its caption.",
              "field": _fields(facts)}
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": facts.name,
        "alternateName": facts.title,
        "description": facts.description,
        **({"license": facts.license_url} if facts.license_url else {}),
        "url": facts.homepage,
        "version": facts.version,
        "datePublished": facts.published,
        "creator": {"@type": "sc:Organization", "name": CREATOR},
        "citeAs": CITATION,
        "keywords": ["identifiability", "self-supervised learning", "contrastive learning", "3DIdent",
                     "synthetic images", "disentanglement"],
        "isLiveDataset": False,
        **_rai(facts),
        "distribution": distribution,
        "recordSet": [splits, images],
    }
