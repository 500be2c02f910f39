import pytest


@pytest.fixture(autouse=True)
def _var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
