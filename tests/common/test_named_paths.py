"""Paths a user names (``common.paths``): inside a root for their purpose, a plain file (no device, FIFO or
folder), no link out, size checked before a byte is read; and the one YAML reader never reads a device or
blocks on a FIFO. A refusal names the field and repeats neither the value nor a server folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vibestudio.common.files import MAX_YAML_BYTES, read_yaml
from vibestudio.common.paths import (
    PathRefused,
    model_folder,
    named_path,
    read_named_file,
    read_regular,
    regular_file,
)

pytestmark = pytest.mark.timeout(30)  # a guard that fails would block on a FIFO or read /dev/zero forever


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "rules"
    r.mkdir()
    (r / "ok.yaml").write_text("rules: []\n", encoding="utf-8")
    return r


def _refused(match: str, fn, *args, **kw) -> str:
    with pytest.raises(PathRefused, match=match) as err:
        fn(*args, **kw)
    return str(err.value)


def test_a_name_or_a_path_inside_the_root_is_resolved(root):
    assert regular_file("ok.yaml", "verdict_rules", [root], 1024) == (root / "ok.yaml").resolve()
    assert regular_file(str(root / "ok.yaml"), "verdict_rules", [root], 1024) == (root / "ok.yaml").resolve()
    second = root.parent / "second"
    second.mkdir()
    (second / "only-here.yaml").write_text("x: 1\n")
    assert named_path("only-here.yaml", "f", [root, second])[0] == (second / "only-here.yaml").resolve()
    assert read_named_file("ok.yaml", "verdict_rules", [root], 1024) == b"rules: []\n"


@pytest.mark.parametrize("value", ["/etc/passwd", "../escape.yaml", "sub/../../escape.yaml", "~/x.yaml"])
def test_a_path_outside_the_root_is_refused_naming_the_field(root, value):
    (root.parent / "escape.yaml").write_text("secret: 1\n")
    msg = _refused(
        "^verdict_rules: the path must be inside", regular_file, value, "verdict_rules", [root], 1024
    )
    assert value not in msg and str(root) not in msg


def test_a_symlink_out_of_the_root_is_refused(root, tmp_path):
    outside = tmp_path / "outside.yaml"
    outside.write_text("secret: 1\n")
    (root / "link.yaml").symlink_to(outside)
    (root / "devlink.yaml").symlink_to("/dev/zero")
    _refused(
        "^verdict_rules: the path leads outside", regular_file, "link.yaml", "verdict_rules", [root], 1024
    )
    _refused("leads outside", read_named_file, "devlink.yaml", "verdict_rules", [root], 1024)
    (root / "inside.yaml").symlink_to(root / "ok.yaml")  # a link that stays inside is fine
    assert read_named_file("inside.yaml", "verdict_rules", [root], 1024) == b"rules: []\n"


def test_a_device_is_refused_before_it_is_read(root):
    _refused("^f: must name a plain file; this is a device", regular_file, "/dev/zero", "f", ["/dev"], 1024)
    _refused("a device", read_regular, "/dev/zero", 1024, "f")


def test_a_fifo_is_refused_without_blocking(root):
    os.mkfifo(root / "pipe.yaml")
    _refused("^verdict_rules: must name a plain file; this is a FIFO", regular_file, "pipe.yaml",
             "verdict_rules", [root], 1024)  # fmt: skip
    _refused("a FIFO", read_regular, root / "pipe.yaml", 1024, "f")  # no writer: open() alone would block


def test_a_folder_is_not_a_file(root):
    (root / "sub").mkdir()
    _refused("this is a folder", regular_file, "sub", "f", [root], 1024)


def test_a_huge_file_is_refused_before_a_byte_is_read(root):
    huge = root / "huge.yaml"
    with open(huge, "wb") as fh:
        fh.truncate(8 * 2**30)  # sparse: 8 GB that take no disk
    _refused(
        "^f: the file is larger than the 64 KB limit", regular_file, "huge.yaml", "f", [root], 64 * 2**10
    )
    _refused("larger than", read_named_file, "huge.yaml", "f", [root], 64 * 2**10)
    _refused("larger than", read_regular, huge, 1024, "f")


def test_a_missing_file_and_odd_values_are_refused(root):
    _refused("no such file", regular_file, "nope.yaml", "f", [root], 1024)
    for value in ("", "  ", None, 3, "a\x00b", "x" * 5000):
        _refused("^f: ", regular_file, value, "f", [root], 1024)


def test_a_model_folder_holds_only_plain_files_and_links_that_stay_inside(tmp_path):
    models = tmp_path / "models"
    ckpt = models / "ckpt"
    (ckpt / "sub").mkdir(parents=True)
    (ckpt / "config.json").write_text("{}")
    (ckpt / "sub" / "weights.bin").write_bytes(b"\0" * 16)
    (ckpt / "alias.bin").symlink_to(ckpt / "sub" / "weights.bin")
    assert model_folder("ckpt", "model", [models], needs="config.json") == ckpt.resolve()
    _refused("no adapter_config.json", model_folder, "ckpt", "adapter", [models], needs="adapter_config.json")
    os.mkfifo(ckpt / "sub" / "tokenizer.json")
    _refused("^model: the folder holds a FIFO", model_folder, "ckpt", "model", [models], needs="config.json")
    (ckpt / "sub" / "tokenizer.json").unlink()
    (ckpt / "sub" / "tokenizer.json").symlink_to("/dev/zero")
    _refused("link that leads outside", model_folder, "ckpt", "model", [models], needs="config.json")
    (ckpt / "sub" / "tokenizer.json").unlink()
    (ckpt / "sub" / "loop").symlink_to(ckpt)  # a link back up is walked once, not forever
    assert model_folder(str(ckpt), "model", [models], needs="config.json") == ckpt.resolve()


def test_the_yaml_reader_refuses_a_device_and_a_fifo_at_once(tmp_path):
    data, error = read_yaml("/dev/zero")
    assert data is None and error is not None and "device" in error.message
    os.mkfifo(tmp_path / "p.yaml")
    data, error = read_yaml(tmp_path / "p.yaml")
    assert data is None and error is not None and "FIFO" in error.message
    big = tmp_path / "big.yaml"
    with open(big, "wb") as fh:
        fh.truncate(MAX_YAML_BYTES + 1)
    assert "MB limit for YAML" in read_yaml(big)[1].message
