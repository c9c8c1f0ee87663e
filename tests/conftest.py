pytest_plugins = ["kafkalite.testing.fixtures"]
