import pytest

import ember


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)
