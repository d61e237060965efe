//! Land polygons for border strictness (`bt`).
