"""Typed run configuration: frozen dataclasses, loaded from YAML plus `--set` overrides.

The dataclasses are the one source of truth: YAML keys, `--set section.key=value` and the
list of valid keys in error messages are all derived from them.

    schema.py    the sections (ModelConfig ... EvalConfig) and Config
    recipes.py   Recipe and RECIPES: one row per algorithm; resolve() fills its defaults
    load.py      load_config, from_dict, build, merge, parse_set, field_docs, valid_keys, to_dict, replace
"""

from tempering.config.load import build, field_docs, from_dict, merge, valid_keys, parse_set, load_config, to_dict, replace
from tempering.config.recipes import FALLBACK_DEFAULTS, GAE, RECIPES, Recipe, resolve
from tempering.config.schema import ModelConfig, EnvConfig, RolloutConfig, AlgorithmConfig, CriticConfig, PreferenceConfig, RewardConfig, DataConfig, LoraConfig, OptimConfig, TrainConfig, SchedulerConfig, EvalConfig, Config

__all__ = ['build', 'from_dict', 'merge', 'AlgorithmConfig', 'Config', 'CriticConfig', 'DataConfig', 'EnvConfig', 'EvalConfig', 'FALLBACK_DEFAULTS', 'GAE', 'LoraConfig', 'ModelConfig', 'OptimConfig', 'PreferenceConfig', 'RECIPES', 'Recipe', 'RewardConfig', 'RolloutConfig', 'SchedulerConfig', 'TrainConfig', 'field_docs', 'load_config', 'parse_set', 'replace', 'resolve', 'to_dict', 'valid_keys']
