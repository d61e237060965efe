//! Maps: the vector tileset (MBTiles) the map routes serve, and raster tiles rendered from it.
//!
//! - [`tileset`]: an MBTiles file of vector tiles and SDF glyph ranges, read at open.
//! - [`mvt`]: decoding and encoding of Mapbox Vector Tiles.
//! - [`overzoom`]: vector tiles past the tileset's deepest zoom, cut from their ancestor.
//! - [`style`]: the subset of the MapLibre style specification the renderer interprets.
//! - [`glyphs`]: SDF glyph ranges and text drawn from them.
//! - [`render`]: raster tiles (PNG) from vector tiles and a style.
//! - [`sprite`]: icons rasterized into sprite sheets and for the renderer.
//! - [`staticmap`]: static map images (viewport, paths, markers), PNG or JPEG.
//! - [`pbf`]: the protocol-buffers reader under the tile and glyph formats.

pub mod glyphs;
pub mod mvt;
pub mod overzoom;
pub mod pbf;
pub mod render;
pub mod sprite;
pub mod staticmap;
pub mod style;
pub mod tileset;

pub use render::{RenderError, Renderer};
pub use sprite::Sprite;
pub use style::Style;
pub use tileset::{Tileset, TilesetError};
