//! Streaming import of station exports into a station database.
