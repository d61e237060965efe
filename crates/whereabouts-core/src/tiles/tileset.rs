//! An MBTiles 1.3 file of gzip-compressed vector tiles (data/basemap.mbtiles, or a user's own),
//! read whole at open: a missing or corrupt file fails there, not at the first request, and
//! lookups afterwards need no lock. The optional `glyphs` table holds SDF glyph ranges.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::mvt::Tile;

/// Why a tileset could not be opened or a tile read.
#[derive(Debug)]
pub struct TilesetError(pub String);

impl std::fmt::Display for TilesetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TilesetError {}

/// A tileset held in memory.
pub struct Tileset {
    /// `metadata` rows.
    pub metadata: HashMap<String, String>,
    pub minzoom: u8,
    pub maxzoom: u8,
    /// Gzip-compressed tiles by (z, x, y), y counted from the north (XYZ).
    tiles: HashMap<(u8, u32, u32), Vec<u8>>,
    /// Glyph ranges by (fontstack, "start-end").
    glyphs: HashMap<(String, String), Vec<u8>>,
    /// SVG icons by name (the optional `icons` table), for sprites.
    icons: std::collections::BTreeMap<String, String>,
}

impl Tileset {
    /// Opens an MBTiles file of vector tiles and checks it: the tables, `format` `pbf`, zoom
    /// levels, and that the lowest zoom's tiles decompress and decode.
    pub fn open(path: &Path) -> Result<Tileset, TilesetError> {
        let err = |what: &str| TilesetError(format!("tileset {}: {what}", path.display()));
        if !path.is_file() {
            return Err(err("no such file"));
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| err(&format!("cannot open as SQLite: {e}")))?;
        let sql = |e: rusqlite::Error| err(&format!("not a readable MBTiles file: {e}"));
        let mut metadata = HashMap::new();
        let mut stmt = conn
            .prepare("SELECT name, value FROM metadata")
            .map_err(sql)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })
            .map_err(sql)?;
        for row in rows {
            let (k, v) = row.map_err(sql)?;
            metadata.insert(k, v.unwrap_or_default());
        }
        match metadata.get("format").map(String::as_str) {
            Some("pbf") => {}
            other => {
                return Err(err(&format!(
                    "metadata format is {other:?}, expected \"pbf\" (vector tiles)"
                )))
            }
        }

        let mut tiles = HashMap::new();
        let mut stmt = conn
            .prepare("SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles")
            .map_err(sql)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                ))
            })
            .map_err(sql)?;
        let (mut minzoom, mut maxzoom) = (u8::MAX, 0u8);
        for row in rows {
            let (z, x, row_tms, data) = row.map_err(sql)?;
            if !(0..=24).contains(&z) {
                return Err(err(&format!("tile at zoom {z}")));
            }
            let n = 1i64 << z;
            if !(0..n).contains(&x) || !(0..n).contains(&row_tms) {
                return Err(err(&format!(
                    "tile {z}/{x}/{row_tms} outside its zoom level"
                )));
            }
            let z = z as u8;
            minzoom = minzoom.min(z);
            maxzoom = maxzoom.max(z);
            tiles.insert((z, x as u32, (n - 1 - row_tms) as u32), data);
        }
        if tiles.is_empty() {
            return Err(err("no tiles"));
        }

        let has_table = |name: &str| -> Result<bool, TilesetError> {
            let n: i64 = conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
                    [name],
                    |r| r.get(0),
                )
                .map_err(sql)?;
            Ok(n > 0)
        };
        let mut glyphs = HashMap::new();
        if has_table("glyphs")? {
            let mut stmt = conn
                .prepare("SELECT fontstack, range, data FROM glyphs")
                .map_err(sql)?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Vec<u8>>(2)?,
                    ))
                })
                .map_err(sql)?;
            for row in rows {
                let (f, r, d) = row.map_err(sql)?;
                glyphs.insert((f, r), d);
            }
        }

        let mut icons = std::collections::BTreeMap::new();
        if has_table("icons")? {
            let mut stmt = conn.prepare("SELECT name, svg FROM icons").map_err(sql)?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
                .map_err(sql)?;
            for row in rows {
                let (name, svg) = row.map_err(sql)?;
                icons.insert(name, svg);
            }
        }

        let set = Tileset {
            icons,
            metadata,
            minzoom,
            maxzoom,
            tiles,
            glyphs,
        };
        for ((z, x, y), _) in set.tiles.iter().filter(|(k, _)| k.0 == minzoom) {
            set.decoded(*z, *x, *y)
                .map_err(|e| err(&format!("tile {z}/{x}/{y}: {e}")))?;
        }
        Ok(set)
    }

    /// The stored (gzip-compressed, or empty) bytes of a tile.
    pub fn raw(&self, z: u8, x: u32, y: u32) -> Option<&[u8]> {
        self.tiles.get(&(z, x, y)).map(Vec::as_slice)
    }

    /// The uncompressed bytes of a tile.
    pub fn uncompressed(&self, z: u8, x: u32, y: u32) -> Result<Option<Vec<u8>>, TilesetError> {
        let Some(raw) = self.raw(z, x, y) else {
            return Ok(None);
        };
        gunzip(raw).map(Some)
    }

    /// A tile decoded; a tile that is not stored is `None`.
    pub fn decoded(&self, z: u8, x: u32, y: u32) -> Result<Option<Tile>, TilesetError> {
        let Some(bytes) = self.uncompressed(z, x, y)? else {
            return Ok(None);
        };
        Tile::decode(&bytes)
            .map(Some)
            .map_err(|e| TilesetError(e.to_string()))
    }

    /// Tile z/x/y as gzip-compressed MVT: a stored tile as it is; a tile deeper than the set's
    /// deepest zoom cut from its ancestor there ([`super::overzoom::child`], 64 units of buffer).
    /// `None` when there is no such tile (or ancestor).
    pub fn vector_tile(&self, z: u8, x: u32, y: u32) -> Result<Option<Vec<u8>>, TilesetError> {
        if z <= self.maxzoom {
            return Ok(self.raw(z, x, y).map(<[u8]>::to_vec));
        }
        if z > 24 || u64::from(x) >= 1u64 << z || u64::from(y) >= 1u64 << z {
            return Ok(None);
        }
        let d = z - self.maxzoom;
        let Some(ancestor) = self.decoded(self.maxzoom, x >> d, y >> d)? else {
            return Ok(None);
        };
        let mask = (1u32 << d) - 1;
        let child = super::overzoom::child(&ancestor, d, x & mask, y & mask, 64.0);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
        std::io::Write::write_all(&mut gz, &child.encode())
            .map_err(|e| TilesetError(e.to_string()))?;
        gz.finish()
            .map(Some)
            .map_err(|e| TilesetError(e.to_string()))
    }

    /// A glyph range (`range` as `0-255`) of a fontstack.
    pub fn glyph_range(&self, fontstack: &str, range: &str) -> Option<&[u8]> {
        self.glyphs
            .get(&(fontstack.to_string(), range.to_string()))
            .map(Vec::as_slice)
    }

    /// Every glyph range of `fontstack`.
    pub fn glyph_ranges<'a>(&'a self, fontstack: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.glyphs
            .iter()
            .filter(move |((f, _), _)| f == fontstack)
            .map(|(_, d)| d.as_slice())
    }

    /// The fontstacks that have glyphs, sorted.
    pub fn fontstacks(&self) -> Vec<String> {
        let mut v: Vec<String> = self.glyphs.keys().map(|(f, _)| f.clone()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// The SVG icons, by name.
    pub fn icons(&self) -> impl Iterator<Item = (&str, &str)> {
        self.icons.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// How many tiles the set holds.
    pub fn tile_count(&self) -> usize {
        self.tiles.len()
    }
}

/// Gzip-compressed bytes uncompressed; bytes without the gzip magic (and empty tiles) as they are.
pub fn gunzip(raw: &[u8]) -> Result<Vec<u8>, TilesetError> {
    if raw.len() < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
        return Ok(raw.to_vec());
    }
    let mut out = Vec::with_capacity(raw.len() * 3);
    flate2::read::GzDecoder::new(raw)
        .read_to_end(&mut out)
        .map_err(|e| TilesetError(format!("tile does not decompress: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basemap() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/basemap.mbtiles")
    }

    #[test]
    fn opens_the_embedded_basemap() {
        let set = Tileset::open(&basemap()).unwrap();
        assert_eq!((set.minzoom, set.maxzoom), (0, 7));
        assert_eq!(
            set.tile_count(),
            (0..=7).map(|z| 1usize << (2 * z)).sum::<usize>()
        );
        let tile = set.decoded(0, 0, 0).unwrap().unwrap();
        for layer in ["water", "boundary", "place"] {
            assert!(tile.layer(layer).is_some(), "{layer}");
        }
        assert!(set.glyph_range("Noto Sans Regular", "0-255").is_some());
    }

    #[test]
    fn every_tile_of_the_basemap_decodes_in_the_openmaptiles_layers() {
        let set = Tileset::open(&basemap()).unwrap();
        let known = ["water", "waterway", "boundary", "place"];
        let mut features = 0;
        for z in 0..=7u8 {
            for x in 0..1u32 << z {
                for y in 0..1u32 << z {
                    let tile = set.decoded(z, x, y).unwrap().unwrap();
                    for layer in &tile.layers {
                        assert!(
                            known.contains(&layer.name.as_str()),
                            "{z}/{x}/{y}: {}",
                            layer.name
                        );
                        assert_eq!(layer.extent, 4096);
                        features += layer.features.len();
                    }
                }
            }
        }
        assert!(features > 50_000, "{features}");
    }

    #[test]
    fn tiles_past_the_deepest_zoom_are_cut_from_their_ancestor() {
        let set = Tileset::open(&basemap()).unwrap();
        assert_eq!(
            set.vector_tile(3, 4, 2).unwrap().as_deref(),
            set.raw(3, 4, 2)
        );
        // z12 over The Hague's sea front: sea, and the coast's land as a hole in it.
        let gz = set.vector_tile(12, 2095, 1351).unwrap().unwrap();
        let tile = Tile::decode(&gunzip(&gz).unwrap()).unwrap();
        assert!(tile.layer("water").is_some());
        assert!(set.vector_tile(12, 4096, 0).unwrap().is_none());
    }

    #[test]
    fn missing_and_corrupt_files_fail_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let missing = Tileset::open(&dir.path().join("none.mbtiles"))
            .err()
            .unwrap();
        assert!(missing.0.contains("no such file"), "{missing}");
        let junk = dir.path().join("junk.mbtiles");
        std::fs::write(&junk, b"not a database at all, just some bytes").unwrap();
        let e = Tileset::open(&junk).err().unwrap();
        assert!(e.0.contains("junk.mbtiles"), "{e}");
    }
}
