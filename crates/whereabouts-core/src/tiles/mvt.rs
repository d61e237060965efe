//! Decoding of Mapbox Vector Tiles 2.1 (the `.pbf` tiles the basemap holds) into layers of
//! features with their properties and geometry in tile coordinates (0 to `extent`).

use super::pbf::{packed_varints, zigzag, PbfError, Reader};

/// A property value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    String(String),
    Number(f64),
    Bool(bool),
}

/// The geometry type of a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeomType {
    Unknown,
    Point,
    LineString,
    Polygon,
}

/// One feature: its tags point into its layer's keys and values.
#[derive(Debug, Clone)]
pub struct Feature {
    pub id: Option<u64>,
    pub kind: GeomType,
    tags: Vec<(u32, u32)>,
    /// Points (one part each for a multipoint's points), lines, or polygon rings (outer rings
    /// and holes as the tile winds them; fill them with the even-odd rule).
    pub parts: Vec<Vec<(f32, f32)>>,
}

/// One layer of a tile.
#[derive(Debug, Clone)]
pub struct Layer {
    pub name: String,
    pub extent: u32,
    keys: Vec<String>,
    values: Vec<Value>,
    pub features: Vec<Feature>,
}

impl Layer {
    /// The value of property `key` of `feature`.
    pub fn property(&self, feature: &Feature, key: &str) -> Option<&Value> {
        feature.tags.iter().find_map(|&(k, v)| {
            (self.keys.get(k as usize).map(String::as_str) == Some(key))
                .then(|| self.values.get(v as usize))
                .flatten()
        })
    }
}

/// A decoded tile.
#[derive(Debug, Clone, Default)]
pub struct Tile {
    pub layers: Vec<Layer>,
}

impl Tile {
    /// Decodes an uncompressed tile.
    pub fn decode(buf: &[u8]) -> Result<Tile, PbfError> {
        let mut tile = Tile::default();
        let mut r = Reader::new(buf);
        while let Some((n, f)) = r.next_field()? {
            if n == 3 {
                tile.layers.push(decode_layer(f.bytes())?);
            }
        }
        Ok(tile)
    }

    /// The layer called `name`.
    pub fn layer(&self, name: &str) -> Option<&Layer> {
        self.layers.iter().find(|l| l.name == name)
    }
}

fn decode_layer(buf: &[u8]) -> Result<Layer, PbfError> {
    let mut layer = Layer {
        name: String::new(),
        extent: 4096,
        keys: vec![],
        values: vec![],
        features: vec![],
    };
    let mut r = Reader::new(buf);
    while let Some((n, f)) = r.next_field()? {
        match n {
            1 => layer.name = String::from_utf8_lossy(f.bytes()).into_owned(),
            2 => layer.features.push(decode_feature(f.bytes())?),
            3 => layer
                .keys
                .push(String::from_utf8_lossy(f.bytes()).into_owned()),
            4 => layer.values.push(decode_value(f.bytes())?),
            5 => layer.extent = f.uint() as u32,
            _ => {}
        }
    }
    if layer.extent == 0 {
        return Err(PbfError("layer extent 0"));
    }
    Ok(layer)
}

fn decode_value(buf: &[u8]) -> Result<Value, PbfError> {
    let mut r = Reader::new(buf);
    let mut value = Value::Bool(false);
    while let Some((n, f)) = r.next_field()? {
        value = match n {
            1 => Value::String(String::from_utf8_lossy(f.bytes()).into_owned()),
            2 => Value::Number(f64::from(f32::from_bits(f.uint() as u32))),
            3 => Value::Number(f64::from_bits(f.uint())),
            4 => Value::Number(f.uint() as i64 as f64),
            5 => Value::Number(f.uint() as f64),
            6 => Value::Number(f.sint() as f64),
            7 => Value::Bool(f.uint() != 0),
            _ => value,
        };
    }
    Ok(value)
}

fn decode_feature(buf: &[u8]) -> Result<Feature, PbfError> {
    let mut feature = Feature {
        id: None,
        kind: GeomType::Unknown,
        tags: vec![],
        parts: vec![],
    };
    let mut geometry: &[u8] = &[];
    let mut r = Reader::new(buf);
    while let Some((n, f)) = r.next_field()? {
        match n {
            1 => feature.id = Some(f.uint()),
            2 => {
                let t = packed_varints(f.bytes())?;
                feature.tags = t
                    .chunks_exact(2)
                    .map(|c| (c[0] as u32, c[1] as u32))
                    .collect();
            }
            3 => {
                feature.kind = match f.uint() {
                    1 => GeomType::Point,
                    2 => GeomType::LineString,
                    3 => GeomType::Polygon,
                    _ => GeomType::Unknown,
                }
            }
            4 => geometry = f.bytes(),
            _ => {}
        }
    }
    feature.parts = decode_geometry(&packed_varints(geometry)?, feature.kind)?;
    Ok(feature)
}

/// Runs the MoveTo/LineTo/ClosePath commands into parts.
fn decode_geometry(cmds: &[u64], kind: GeomType) -> Result<Vec<Vec<(f32, f32)>>, PbfError> {
    let mut parts: Vec<Vec<(f32, f32)>> = vec![];
    let (mut x, mut y) = (0i64, 0i64);
    let mut i = 0;
    while i < cmds.len() {
        let id = cmds[i] & 7;
        let count = (cmds[i] >> 3) as usize;
        i += 1;
        match id {
            1 | 2 => {
                if i + 2 * count > cmds.len() {
                    return Err(PbfError("geometry command past the end"));
                }
                for _ in 0..count {
                    x += zigzag(cmds[i]);
                    y += zigzag(cmds[i + 1]);
                    i += 2;
                    if id == 1 || parts.is_empty() {
                        parts.push(Vec::new());
                    }
                    parts.last_mut().expect("a part").push((x as f32, y as f32));
                }
            }
            7 => {}
            _ => return Err(PbfError("unknown geometry command")),
        }
    }
    if kind == GeomType::Point {
        // A multipoint is one MoveTo with several points: one part each.
        parts = parts.into_iter().flatten().map(|p| vec![p]).collect();
    }
    Ok(parts)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A hand-encoded tile: layer "place" (extent 4096) with one point (25, 17) tagged
    /// name=Paris, rank=3.
    pub(crate) fn sample_tile() -> Vec<u8> {
        let feature: Vec<u8> = vec![0x12, 0x04, 0, 0, 1, 1, 0x18, 0x01, 0x22, 0x03, 0x09, 50, 34];
        let mut layer: Vec<u8> = vec![0x0a, 0x05];
        layer.extend_from_slice(b"place");
        layer.push(0x12);
        layer.push(feature.len() as u8);
        layer.extend_from_slice(&feature);
        layer.extend_from_slice(&[0x1a, 0x04]);
        layer.extend_from_slice(b"name");
        layer.extend_from_slice(&[0x1a, 0x04]);
        layer.extend_from_slice(b"rank");
        layer.extend_from_slice(&[0x22, 0x07, 0x0a, 0x05]);
        layer.extend_from_slice(b"Paris");
        layer.extend_from_slice(&[0x22, 0x02, 0x28, 0x03]);
        layer.extend_from_slice(&[0x28, 0x80, 0x20, 0x78, 0x02]);
        let mut tile = vec![0x1a, layer.len() as u8];
        tile.extend_from_slice(&layer);
        tile
    }

    #[test]
    fn decodes_a_point_with_properties() {
        let tile = Tile::decode(&sample_tile()).unwrap();
        let layer = tile.layer("place").unwrap();
        assert_eq!(layer.extent, 4096);
        let f = &layer.features[0];
        assert_eq!(f.kind, GeomType::Point);
        assert_eq!(f.parts, vec![vec![(25.0, 17.0)]]);
        assert_eq!(
            layer.property(f, "name"),
            Some(&Value::String("Paris".into()))
        );
        assert_eq!(layer.property(f, "rank"), Some(&Value::Number(3.0)));
        assert_eq!(layer.property(f, "class"), None);
    }

    #[test]
    fn decodes_polygon_rings() {
        // MoveTo(0,0) LineTo(10,0)(0,10) ClosePath, MoveTo(+2,-8) LineTo(1,0)(0,1) ClosePath
        let cmds = [9, 0, 0, 18, 20, 0, 0, 20, 15, 9, 4, 15, 18, 2, 0, 0, 2, 15];
        let parts = decode_geometry(&cmds, GeomType::Polygon).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0], vec![(0.0, 0.0), (10.0, 0.0), (10.0, 10.0)]);
        assert_eq!(parts[1][0], (12.0, 2.0));
    }

    #[test]
    fn rejects_truncated_geometry() {
        assert!(decode_geometry(&[9, 0], GeomType::Point).is_err());
    }
}
