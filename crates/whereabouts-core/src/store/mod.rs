//! The station database: immutable FlatBuffers shards, memory-mapped, behind a manifest.

pub mod record;
