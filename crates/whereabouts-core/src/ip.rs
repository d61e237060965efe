//! IP address to location from MMDB files (the `ipf` fallback).
