"""State images: round trip, and damage is refused with a clear error."""

from __future__ import annotations

import pytest

from metalog.generate import HistoryGenerator, HistorySettings
from metalog.state import MetadataLoader
from metalog.state.records import image_digest
from metalog.state.serde import ImageFormatError, image_from_bytes, image_to_bytes


def sample_image():  # type: ignore[no-untyped-def]
    gen = HistoryGenerator(7, HistorySettings(records=500))
    return MetadataLoader().replay_all((i, r) for i, (_, r, _) in enumerate(gen.records()))


def test_round_trip_keeps_everything() -> None:
    image = sample_image()
    back = image_from_bytes(image_to_bytes(image))
    assert back == image
    assert image_digest(back) == image_digest(image)


@pytest.mark.parametrize(("damage", "reason"), [
    (lambda b: b[:10], "shorter than"),
    (lambda b: b"XXXXX" + b[5:], "not a metalog state image"),
    (lambda b: b[:5] + b"\x09" + b[6:], "unsupported state image format version 9"),
    (lambda b: b[:-1], "header says"),
    (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "checksum mismatch"),
])
def test_damaged_images_are_refused(damage, reason: str) -> None:  # type: ignore[no-untyped-def]
    data = image_to_bytes(sample_image())
    with pytest.raises(ImageFormatError, match=reason):
        image_from_bytes(damage(data), "x.image")


def test_a_record_of_another_type_where_the_image_keeps_one_type_is_refused() -> None:
    # a payload (its CRC recomputed) whose controllers hold a PartitionRecord: a one-line error, not an
    # AttributeError from the record's missing controller_id
    import crc32c
    import msgpack

    from metalog.codec.framing import encode_metadata_record
    from metalog.codec.messages import PartitionRecord
    from metalog.state.serde import _HEADER, FORMAT_VERSION, MAGIC

    data = image_to_bytes(sample_image())
    d = msgpack.unpackb(data[_HEADER.size:], raw=False, strict_map_key=False)
    d["records"]["controllers"] = [encode_metadata_record(PartitionRecord(), 0)]
    payload = msgpack.packb(d, use_bin_type=True)
    bad = _HEADER.pack(MAGIC, FORMAT_VERSION, crc32c.crc32c(payload), len(payload)) + payload
    with pytest.raises(ImageFormatError, match="x.image: malformed payload .*controllers holds a PartitionRecord"):
        image_from_bytes(bad, "x.image")
