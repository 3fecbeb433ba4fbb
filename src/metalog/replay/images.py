"""metalog's state images on disk: a MetadataImage (``metalog.state.serde``'s bytes) saved at a published batch end,
so that a replay can start there.

They live beside Kafka's files, in ``<log dir>/metalog-images/<20-digit offset>.image``, where Kafka never looks;
each is written whole, fsynced, then renamed into place, and read back only if its offset is the one its name
says.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from metalog.errors import LogError
from metalog.replay.points import StartPoint
from metalog.state.image import MetadataImage
from metalog.state.serde import image_from_bytes, image_to_bytes

IMAGE_DIR = "metalog-images"
_IMAGE_NAME = re.compile(r"^(\d{20})\.image$")


def image_points(root: Path) -> list[StartPoint]:
    """The state images of the log directory ``root``, as points a replay can start from (unordered)."""
    image_dir = root / IMAGE_DIR
    if not image_dir.is_dir():
        return []
    return [StartPoint("image", int(m.group(1)), p) for p in image_dir.iterdir() if (m := _IMAGE_NAME.match(p.name))]


def write_image(root: Path, image: MetadataImage) -> Path:
    """``image`` as the state image named by its offset: written whole, then renamed."""
    directory = root / IMAGE_DIR
    directory.mkdir(exist_ok=True)
    path = directory / f"{image.offset:020d}.image"
    tmp = path.with_suffix(".image.tmp")
    tmp.write_bytes(image_to_bytes(image))
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    tmp.replace(path)
    return path


def read_image(path: Path, offset: int) -> MetadataImage:
    """The state image at ``path``, which must hold ``offset``, the offset its name says."""
    image = image_from_bytes(path.read_bytes(), str(path))
    if image.offset != offset:
        raise LogError(f"state image holds offset {image.offset}, its name says {offset}", file=path)
    return image
