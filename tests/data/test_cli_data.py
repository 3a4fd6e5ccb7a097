import gzip
import urllib.error

from click.testing import CliRunner
from data_fixtures import tar_gz, write_cifar_pickles, write_libsvm, write_tiny_imagenet
from test_leaf_builder import RAW

from benchmark.cli import main
from benchmark.cli_data import data
from leaf_data.shakespeare_text import users_text


def test_ls_reports_found_and_missing_with_where_to_put_it(tmp_path):
    write_libsvm(tmp_path / "a9a", [(1, {1: 1})], gz=True)
    write_libsvm(tmp_path / "a9a.t", [(1, {1: 1})])
    write_tiny_imagenet(tmp_path / "staging", with_train=False)
    tar_gz(tmp_path / "staging" / "tiny-imagenet-200", tmp_path / "tiny-imagenet-200-val.tar.gz")
    result = CliRunner().invoke(data, ["ls", "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines() if line and not line.startswith(" ")}
    assert "found" in lines["a9a"] and f"{tmp_path}/a9a.gz (file" in lines["a9a"] and "checksum" in lines["a9a"]
    assert "missing" in lines["cifar10"] and f"{tmp_path}/cifar-10-python.tar.gz" in result.output
    assert "missing" in lines["tiny_imagenet"] and "only the val split" in result.output
    assert "generated" in lines["synthetic"]
    assert not (tmp_path / "fedbench-cache" / "extracted").exists()  # listing never extracts


def test_prepare_offline_exits_2_with_what_to_download_where(tmp_path, monkeypatch, capsys):
    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr("urllib.request.urlopen", offline)
    assert main(["data", "prepare", "cifar10", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "cifar-10-python.tar.gz" in err and "kriz" in err and str(tmp_path) in err.replace("\n", "")
    assert not list(tmp_path.glob("*.partial"))


def test_prepare_downloads_then_fills_the_cache(tmp_path, monkeypatch, isolated_cache):
    write_cifar_pickles(tmp_path / "staging")
    archive = tar_gz(tmp_path / "staging" / "cifar-10-batches-py", tmp_path / "served.tar.gz")
    monkeypatch.setattr("urllib.request.urlopen", lambda url, timeout: open(archive, "rb"))
    root = tmp_path / "root"
    result = CliRunner().invoke(data, ["prepare", "cifar10", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert (root / "cifar-10-python.tar.gz").is_file() and "20 train / 4 test" in result.output
    assert list((isolated_cache / "tensors").glob("cifar10-*.pt"))


def test_prepare_builds_shakespeare_from_the_raw_text(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    with gzip.open(root / "shakespeare-complete-works.txt.gz", "wt") as f:
        f.write(RAW)
    dest = tmp_path / "built"
    args = ["prepare", "shakespeare", "--root", str(root), "--dest", str(dest), "--tf", "0.2", "--test-gap", "10"]
    result = CliRunner().invoke(data, args)
    assert result.exit_code == 0, result.output
    assert list((dest / "shakespeare" / "data" / "train").glob("*.json"))
    windows = [len(t) - 80 for t in users_text(RAW).values() if len(t) > 80]  # HERO, DUKE
    train = sum(int(0.2 * n) for n in windows)
    test = sum(n - int(0.2 * n) - 10 for n in windows)  # --test-gap 10 windows skipped
    assert "users_kept 2" in result.output and f"shakespeare: {train} train / {test} test" in result.output


def test_prepare_unknown_dataset(tmp_path, capsys):
    assert main(["data", "prepare", "imagenet22k", "--root", str(tmp_path)]) == 2
    assert "unknown dataset 'imagenet22k'" in capsys.readouterr().err
