"""User-facing errors: the CLI prints them without a traceback and exits with code 2."""


class UserError(Exception):
    """Bad input the user can fix (suite file, dataset path, CLI flag)."""

    exit_code = 2


class SuiteError(UserError):
    """A suite file failed validation; `problems` are (yaml_path, message) pairs."""

    def __init__(self, file: str, problems: list[tuple[str, str]]):
        self.file = file
        self.problems = problems
        lines = [f"{file}: invalid suite ({len(problems)} problem{'s' if len(problems) != 1 else ''})"]
        lines += [f"  {path or '<root>'}: {msg}" for path, msg in problems]
        super().__init__("\n".join(lines))


class DatasetMissing(UserError):
    """A dataset's files are not where they are expected."""


class DataInvalid(UserError):
    """A dataset's files were found but hold something a job cannot train on (labels out of
    range, inputs and labels of different lengths, non-finite inputs)."""
