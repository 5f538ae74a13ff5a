import pytest

from tempering.config import Config, load_config, parse_set, valid_keys
from tempering.errors import ConfigError


def test_defaults_and_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: x\nrollout:\n  temperature: 0.5\n")
    cfg = load_config(path, ["rollout.group_size=4", "optim.lr=1e-4", "optim.betas=[0.8, 0.9]", "train.curriculum=false"])
    assert cfg.name == "x" and cfg.rollout.temperature == 0.5 and cfg.rollout.group_size == 4
    assert cfg.optim.lr == 1e-4 and cfg.optim.betas == (0.8, 0.9) and cfg.train.curriculum is False
    assert cfg.model == Config().model


def test_unknown_key_lists_valid_keys(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("rollout:\n  temprature: 0.5\n")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert "rollout.temprature" in str(e.value) and "rollout.temperature" in str(e.value)


@pytest.mark.parametrize("item", ["rollout.temperature", "=3", "a..b=1", ""])
def test_malformed_set(item):
    with pytest.raises(ConfigError, match="malformed --set"):
        parse_set([item])


def test_wrong_type_is_named():
    with pytest.raises(ConfigError, match="rollout.group_size"):
        load_config(None, ["rollout.group_size=many"])


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_shipped_configs_load():
    for name in ("configs/tiny-cpu.yaml", "configs/smollm2-arith-grpo.yaml"):
        load_config(name)
    assert "algorithm.beta" in valid_keys()
