"""One exception tree for everything a user can get wrong.

    TemperingError            user-facing; the CLI prints the message and exits 2
    ├── ConfigError           bad config file, unknown key, malformed --set, bad option
    ├── ModelNotFoundError    no such preset or model directory
    ├── UnknownEnvError       no such environment id
    ├── TaskError             malformed task, split or episode call (step before reset)
    ├── RunDirError           missing or incompatible run directory for --resume
    ├── SandboxUnavailable    this machine cannot give the isolation the sandbox requires
    ├── SandboxInputError     malformed sandbox request (language, path, limits); also a ValueError
    └── StorageError          object storage failed (an upload, a download) or holds a damaged checkpoint

Each message names the problem and the fix. Bugs are not TemperingErrors: they keep
their traceback.
"""


class TemperingError(Exception):
    """A mistake the user can fix; the message says how."""


class ConfigError(TemperingError):
    pass


class ModelNotFoundError(TemperingError):
    pass


class UnknownEnvError(TemperingError):
    pass


class TaskError(TemperingError):
    pass


class DataLeakError(TemperingError):
    """Held-out tasks (a test or unseen split, HumanEval) reached training data."""


class RunDirError(TemperingError):
    pass


class SandboxUnavailable(TemperingError):
    """This machine cannot provide the isolation the sandbox requires."""


class SandboxInputError(TemperingError, ValueError):
    """A request to the sandbox is malformed (unknown language, bad path, bad limits)."""


class StorageError(TemperingError):
    """Object storage (a run at an s3:// URL) failed or holds something unexpected."""
