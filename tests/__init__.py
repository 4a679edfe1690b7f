"""The test suite, a package so that its modules import the shared helpers as
``tests.helpers.*`` (docs/development.md, "Tests")."""
