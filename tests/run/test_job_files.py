"""A job's files as bytes (what the Ray executor ships between driver and workers) and back."""

from __future__ import annotations

from benchmark.store.job_dir import OUTPUT_FILES, RESUME_FILES, JobDir
from benchmark.store.layout import Store


def test_resume_material_round_trips_and_replaces_a_stale_snapshot_folder(tmp_path):
    src = JobDir(Store(tmp_path / "worker"), "job1")
    (src.path / "client_state.checkpoint").mkdir(parents=True)
    (src.path / "client_state.checkpoint" / "c.f32").write_bytes(b"new")
    src.checkpoint.write_bytes(b"ckpt")
    src.metrics.write_text('{"round": 1}\n')
    src.summary.write_text("{}")  # not resume material

    files = src.read_files(RESUME_FILES)
    assert list(files) == ["metrics.jsonl", "client_state.checkpoint/c.f32", "checkpoint.pt"]  # checkpoint.pt last

    dst = JobDir(Store(tmp_path / "driver"), "job1")
    (dst.path / "client_state.checkpoint").mkdir(parents=True)
    (dst.path / "client_state.checkpoint" / "old.f32").write_bytes(b"stale")
    dst.write_files(files)
    assert dst.read_files(RESUME_FILES) == files
    assert not (dst.path / "client_state.checkpoint" / "old.f32").exists()
    assert not dst.summary.exists()


def test_absent_files_are_left_out_and_summary_comes_last(tmp_path):
    job = JobDir(Store(tmp_path), "job1")
    job.path.mkdir(parents=True)
    job.summary.write_text("{}")
    job.model.write_bytes(b"model")
    assert list(job.read_files(OUTPUT_FILES)) == ["final_model.pt", "summary.json"]


def test_discard_checkpoint(tmp_path):
    job = JobDir(Store(tmp_path), "job1")
    for folder in ("client_state", "client_state.checkpoint"):
        (job.path / folder).mkdir(parents=True)
    job.checkpoint.write_bytes(b"x")
    job.model.write_bytes(b"m")
    job.discard_checkpoint()
    assert [p.name for p in job.path.iterdir()] == ["final_model.pt"]
