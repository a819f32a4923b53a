"""The store suites use the sqlite/postgres `database_url`, `engine` and `store`
fixtures from tests/conftest.py."""
