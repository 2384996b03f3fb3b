"""Diagnosis: a new failure ranked against learned causes, explained, cited."""
