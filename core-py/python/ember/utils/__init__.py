"""`ember.utils`."""
