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


def test_every_setting_has_a_one_line_docstring():
    import dataclasses
    import typing

    from tempering.config import field_docs

    hints = typing.get_type_hints(Config)
    sections = [hints[f.name] for f in dataclasses.fields(Config) if dataclasses.is_dataclass(hints[f.name])]
    assert len(sections) >= 10
    for cls in [Config, *sections]:
        docs = field_docs(cls)
        for f in dataclasses.fields(cls):
            if cls is Config and dataclasses.is_dataclass(hints[f.name]):
                continue
            assert docs.get(f.name), f"{cls.__name__}.{f.name} has no docstring"
            assert "\n" not in docs[f.name], f"{cls.__name__}.{f.name}: keep it to one line"


def test_algorithm_defaults_resolve_per_algorithm():
    dapo = load_config(None, ["algorithm.name=dapo", "rollout.max_new_tokens=100"]).algorithm
    assert (dapo.clip_eps_high, dapo.loss_agg, dapo.drop_zero_variance, dapo.overlong_filter, dapo.overlong_buffer) == \
        (0.28, "token_mean", True, True, 25)
    grpo = load_config(None, ["algorithm.name=grpo"]).algorithm
    assert (grpo.clip_eps_high, grpo.loss_agg, grpo.drop_zero_variance, grpo.overlong_buffer) == \
        (0.2, "seq_mean_token_mean", False, 0)
    assert load_config(None, ["algorithm.name=dr_grpo"]).algorithm.loss_agg == "seq_mean_token_sum_norm"
    assert load_config(None, ["algorithm.name=ppo"]).algorithm.kl_in == "reward"
    # an explicit setting wins over the algorithm's default
    assert load_config(None, ["algorithm.name=dapo", "algorithm.clip_eps_high=0.3"]).algorithm.clip_eps_high == 0.3


@pytest.mark.parametrize("key", ["rollout.min_informative_groups=2", "rollout.max_rounds_per_step=1"])
def test_a_dynamic_sampling_setting_the_algorithm_would_not_read_is_refused(key):
    # grpo leaves dynamic sampling off: the key would be silently unread
    name = key.split("=")[0]
    with pytest.raises(ConfigError, match=f"{name} is set, but only dynamic sampling reads it.*drop_zero_variance true"):
        load_config(None, ["algorithm.name=grpo", key])
    # on (dapo's default, or set), the key is read; explicitly off is the user's choice
    assert load_config(None, ["algorithm.name=dapo", key]).algorithm.drop_zero_variance is True
    for drop in ("true", "false"):
        cfg = load_config(None, [f"algorithm.drop_zero_variance={drop}", key])
        assert str(getattr(cfg.rollout, name.split(".")[1])) == key.split("=")[1]


@pytest.mark.parametrize("sets,match", [
    (["algorithm.name=grpo2"], "unknown algorithm.name 'grpo2'"),
    (["algorithm.name=grpo", "critic.lam=0.9"], "critic.lam is set, but only ppo has a critic"),
    (["algorithm.name=grpo", "preference.beta=0.2"], "preference.beta is set, but only dpo"),
    (["algorithm.name=grpo", "data.path=x.jsonl"], "data.path is set, but RL draws its tasks from env.id"),
    (["algorithm.name=sft"], "algorithm sft trains on a data file: set data.path"),
    (["algorithm.name=dpo", "data.path=x.jsonl", "algorithm.beta=0.1"], "set preference.beta for dpo"),
    (["algorithm.name=sft", "data.path=x.jsonl", "reward.model_weight=1"], "rewards apply to RL only"),
    (["algorithm.kl_target=0.1"], "set algorithm.beta > 0"),
    (["algorithm.name=rloo", "rollout.group_size=1"], "rollout.group_size >= 2"),
    (["algorithm.loss_agg=mean"], "unknown algorithm.loss_agg 'mean'"),
    (["reward.model_weight=0.5"], "needs reward.model"),
    (["reward.model_update_every=5"], "reward.model is not set"),
    (["optim.schedule=linear"], "unknown optim.schedule"),
    (["optim.grad_accum=0"], "optim.grad_accum must be at least 1"),
    (["algorithm.name=grpo", "train.epochs=2"], "an rl run is sized by train.steps"),
    (["algorithm.name=sft", "data.path=x.jsonl", "train.epochs=-1"], "train.epochs is passes over"),
])
def test_conflicting_or_unknown_settings_are_one_clear_error(sets, match):
    from tempering.trainer.validate import validate

    with pytest.raises(ConfigError, match=match):
        validate(load_config(None, sets))


def test_cli_rejects_a_conflicting_setting_with_exit_code_2(tmp_path, capsys):
    from tempering.cli.main import main

    code = main(["train", "configs/tiny-cpu.yaml", "--run-dir", str(tmp_path / "r"), "--set", "critic.gamma=0.9"])
    assert code == 2
    assert "critic.gamma is set, but only ppo has a critic" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # nothing was created


def test_every_shipped_config_loads():
    """Each YAML in configs/ is a valid training config or pipeline config (checked as the
    CLI would, before anything runs)."""
    from pathlib import Path

    from tempering.pipeline.config import load_pipeline

    shipped = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))
    assert len(shipped) >= 8
    for path in shipped:
        if "pipeline" in path.name:
            cfg, _ = load_pipeline(path)
            assert cfg.eval.envs, path
        else:
            assert load_config(path).name == path.stem, path


def test_a_mapping_given_whole_replaces_the_files(tmp_path):
    from tempering.pipeline.config import load_pipeline

    pipeline = "configs/tiny-pipeline.yaml"
    cfg, _ = load_pipeline(pipeline, ["eval.watch={}", "eval.envs.sql/sqlite-v1.n=7"])
    assert cfg.eval.watch == {}  # cleared, not merged into
    assert cfg.env_evals()["sql/sqlite-v1"].n == 7 and "code/repair-v1" in cfg.eval.envs  # a key path still merges
    cfg, data = load_pipeline(pipeline, ["eval.watch={math/arith-v1: {n: 2}}"])
    assert cfg.eval.watch == {"math/arith-v1": {"n": 2}} and type(data["eval"]["watch"]) is dict
    path = tmp_path / "c.yaml"
    path.write_text("rollout:\n  temperature: 0.5\n")
    assert load_config(path, ["rollout={}"]).rollout.temperature == Config().rollout.temperature
