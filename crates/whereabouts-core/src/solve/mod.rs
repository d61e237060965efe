//! The solver: from looked-up stations to a position.
