"""The metrics folder never keeps a file it could not allocate, nor chokes on an empty one.

prometheus-client cannot read an empty values file: a scrape of ``/metrics``, and the master
folding an exited worker's values in, failed on one that a full disk had left (the master
stopped with an internal error).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client.mmap_dict import MmapedDict

from host.observers import metric_files


def _full(fd: int, offset: int, size: int) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_file_the_disk_cannot_hold_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "posix_fallocate", _full)
    path = tmp_path / "histogram_123.db"
    with pytest.raises(OSError) as raised:
        metric_files._allocate(str(path), 4096)
    assert raised.value.errno == errno.ENOSPC
    assert not path.exists()


def test_a_file_with_values_stays_when_it_cannot_grow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "counter_123.db"
    metric_files._allocate(str(path), 4096)
    monkeypatch.setattr(os, "posix_fallocate", _full)
    with pytest.raises(OSError):
        metric_files._allocate(str(path), 1 << 20)
    assert path.stat().st_size == 4096  # NOTE: its values are not the full disk's to lose


def test_an_empty_file_of_an_exited_worker_is_folded_in_as_no_values(tmp_path: Path) -> None:
    folder = str(tmp_path)
    kept = MmapedDict(str(tmp_path / "counter_archive.db"))
    kept.write_value('["host_calls_total", "host_calls_total", [], [], 0]', 3.0, 0.0)
    kept.close()
    (tmp_path / "counter_7.db").touch()
    (tmp_path / "histogram_7.db").touch()
    metric_files.retire(7, folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "counter_archive.db",
        "histogram_archive.db",
    ]
    values = MmapedDict.read_all_values_from_file(str(tmp_path / "counter_archive.db"))
    assert [(key, value) for key, value, *_ in values] == [
        ('["host_calls_total", "host_calls_total", [], [], 0]', 3.0)
    ]
    assert list(MmapedDict.read_all_values_from_file(str(tmp_path / "histogram_archive.db"))) == []


def test_the_master_logs_a_worker_whose_files_cannot_be_folded_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from host.serve import master

    def broken(pid: int, folder: str) -> None:
        raise ValueError("a values file that cannot be read")

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setattr(metric_files, "retire", broken)
    master._child_exit(object(), SimpleNamespace(pid=42))  # type: ignore[arg-type]
    (record,) = [r for r in caplog.records if getattr(r, "event", "") == "metrics_retire_failed"]
    assert record.pid == 42 and "cannot be read" in record.reason
