"""--model takes a Hugging Face model id when its config.json is in the local cache, and says how to fetch it when not."""

import json
import shutil
from pathlib import Path

PHI4 = Path(__file__).parent / "fixtures" / "models" / "phi-4" / "config.json"


def cache_with(root: Path, model_id: str, snapshot: str = "0123abc") -> Path:
    repo = root / "hub" / ("models--" + model_id.replace("/", "--"))
    (repo / "snapshots" / snapshot).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(snapshot + "\n")
    shutil.copy(PHI4, repo / "snapshots" / snapshot / "config.json")
    return repo


def test_a_downloaded_model_id_is_read_from_the_cache(cli, tmp_path, monkeypatch):
    cache_with(tmp_path, "microsoft/phi-4")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    code, out, err = cli("explain", "--model", "microsoft/phi-4", "--gpu", "H100", "--format", "json")
    config = json.loads(out)["results"][0]["config"]
    assert (config["heads"], config["kv_heads"], config["hdim"]) == (40, 10, 128)


def test_a_model_id_never_downloaded_says_how_to_fetch_its_config(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    code, out, err = cli("explain", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "huggingface-cli download meta-llama/Llama-3.1-8B config.json" in err


def test_a_local_folder_that_looks_like_an_id_wins(cli, tmp_path, monkeypatch):
    folder = tmp_path / "acme" / "tiny"
    folder.mkdir(parents=True)
    shutil.copy(PHI4, folder / "config.json")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty"))
    code, out, err = cli("explain", "--model", "acme/tiny", "--gpu", "H100", "--format", "json")
    assert code in (0, 1) and json.loads(out)["results"][0]["config"]["heads"] == 40
