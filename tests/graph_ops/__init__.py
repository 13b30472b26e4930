"""Tests of the ops around the recurrent ones (issue 15); shared helpers in helpers.py."""
