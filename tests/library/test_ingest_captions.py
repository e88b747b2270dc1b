"""Captions for ingested clips: a user's CSV, or the CMU database's own table of trials."""

from __future__ import annotations

import pytest

from kirin.kirin_addon.library.ingest import CaptionTable

from assets_support import ASSETS


def test_a_user_table_names_files_and_clips(tmp_path):
    path = tmp_path / "captions.csv"
    path.write_text("file,clip,caption,species\nFox.glb,Walk,a fox walks,fox\nFox.glb,,a fox moves,\n")
    table = CaptionTable.read(path)
    assert table.for_clip("Fox", "Walk") == ["a fox walks"]
    assert table.for_clip("Fox", "Survey") == ["a fox moves"]  # the whole file's caption
    assert table.species == {"Fox": "fox"}


def test_the_cmu_table_captions_its_takes_however_they_are_numbered(tmp_path):
    path = tmp_path / "cmu.csv"
    path.write_text('"Subject","Trial #","Motion Description","framerate"\n'
                    '7,1,"walk",120\n7,12,"brisk walk",120\n1,1,"playground - forward jumps",120\n')
    table = CaptionTable.read(path)
    assert table.for_clip("007_01", "Take 001") == ["walk"]
    assert table.for_clip("07_12", "") == ["brisk walk"]
    assert table.for_clip("01_01", "") == ["playground - forward jumps"]
    assert table.species["007_12"] == "person" and table.family["01_01"] == "biped"


def test_a_table_of_neither_kind_is_refused(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("name,text\nFox,a fox\n")
    with pytest.raises(ValueError, match="needs the columns file, clip, caption"):
        CaptionTable.read(path)
    bad = tmp_path / "bad_cmu.csv"
    bad.write_text('"Subject","Trial #","Motion Description"\nseven,1,"walk"\n')
    with pytest.raises(ValueError, match="without subject and trial numbers"):
        CaptionTable.read(bad)


def test_the_shipped_cmu_table_captions_subject_seven():
    path = ASSETS / "bvh_cmu_subjects_01_07" / "cmu_descriptions.csv"
    if not path.is_file():
        pytest.skip("../shared/assets/bvh_cmu_subjects_01_07 is not present")
    table = CaptionTable.read(path)
    takes = sorted(p.stem for p in path.parent.glob("*.bvh"))
    assert takes and all(table.for_clip(stem, "") for stem in takes)  # every take has its description
    assert table.for_clip("007_01", "") == ["walk"]
