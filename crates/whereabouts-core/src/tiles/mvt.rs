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

/// Appends a varint.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a length-delimited field.
fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_varint(out, u64::from(field << 3 | 2));
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a varint field.
fn put_uint(out: &mut Vec<u8>, field: u32, v: u64) {
    put_varint(out, u64::from(field << 3));
    put_varint(out, v);
}

fn zigzag_encode(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

impl Tile {
    /// Encodes the tile (uncompressed MVT 2.1). Coordinates are rounded to integers.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![];
        for layer in &self.layers {
            put_bytes(&mut out, 3, &layer.encode());
        }
        out
    }
}

impl Layer {
    /// A layer with the same name, extent, keys and values, and other features.
    pub fn with_features(&self, features: Vec<Feature>) -> Layer {
        Layer {
            name: self.name.clone(),
            extent: self.extent,
            keys: self.keys.clone(),
            values: self.values.clone(),
            features,
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = vec![];
        put_uint(&mut out, 15, 2);
        put_bytes(&mut out, 1, self.name.as_bytes());
        for f in &self.features {
            put_bytes(&mut out, 2, &f.encode());
        }
        for k in &self.keys {
            put_bytes(&mut out, 3, k.as_bytes());
        }
        for v in &self.values {
            let mut b = vec![];
            match v {
                Value::String(s) => put_bytes(&mut b, 1, s.as_bytes()),
                Value::Number(n) if n.fract() == 0.0 && n.abs() < 9e15 => {
                    put_uint(&mut b, 6, zigzag_encode(*n as i64))
                }
                Value::Number(n) => {
                    put_varint(&mut b, 3 << 3 | 1);
                    b.extend_from_slice(&n.to_le_bytes());
                }
                Value::Bool(x) => put_uint(&mut b, 7, u64::from(*x)),
            }
            put_bytes(&mut out, 4, &b);
        }
        put_uint(&mut out, 5, u64::from(self.extent));
        out
    }
}

impl Feature {
    /// A feature with the same id, type and tags, and other parts.
    pub fn with_parts(&self, parts: Vec<Vec<(f32, f32)>>) -> Feature {
        Feature {
            id: self.id,
            kind: self.kind,
            tags: self.tags.clone(),
            parts,
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = vec![];
        if let Some(id) = self.id {
            put_uint(&mut out, 1, id);
        }
        let mut tags = vec![];
        for &(k, v) in &self.tags {
            put_varint(&mut tags, u64::from(k));
            put_varint(&mut tags, u64::from(v));
        }
        put_bytes(&mut out, 2, &tags);
        let kind = match self.kind {
            GeomType::Unknown => 0,
            GeomType::Point => 1,
            GeomType::LineString => 2,
            GeomType::Polygon => 3,
        };
        put_uint(&mut out, 3, kind);
        let mut cmds = vec![];
        let (mut cx, mut cy) = (0i64, 0i64);
        let mut step = |cmds: &mut Vec<u8>, (x, y): (f32, f32)| {
            let (x, y) = (x.round() as i64, y.round() as i64);
            put_varint(cmds, zigzag_encode(x - cx));
            put_varint(cmds, zigzag_encode(y - cy));
            (cx, cy) = (x, y);
        };
        if self.kind == GeomType::Point {
            let points: Vec<(f32, f32)> = self
                .parts
                .iter()
                .filter_map(|p| p.first().copied())
                .collect();
            if !points.is_empty() {
                put_varint(&mut cmds, (points.len() as u64) << 3 | 1);
                for p in points {
                    step(&mut cmds, p);
                }
            }
        } else {
            for part in self.parts.iter().filter(|p| !p.is_empty()) {
                put_varint(&mut cmds, 1 << 3 | 1);
                step(&mut cmds, part[0]);
                if part.len() > 1 {
                    put_varint(&mut cmds, ((part.len() - 1) as u64) << 3 | 2);
                    for &p in &part[1..] {
                        step(&mut cmds, p);
                    }
                }
                if self.kind == GeomType::Polygon {
                    put_varint(&mut cmds, 1 << 3 | 7);
                }
            }
        }
        put_bytes(&mut out, 4, &cmds);
        out
    }
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
    fn encodes_what_it_decodes() {
        let tile = Tile::decode(&sample_tile()).unwrap();
        let again = Tile::decode(&tile.encode()).unwrap();
        let (a, b) = (&tile.layers[0], &again.layers[0]);
        assert_eq!((a.name.as_str(), a.extent), (b.name.as_str(), b.extent));
        assert_eq!(a.features[0].parts, b.features[0].parts);
        assert_eq!(
            b.property(&b.features[0], "name"),
            Some(&Value::String("Paris".into()))
        );
        let ring = Feature {
            id: Some(7),
            kind: GeomType::Polygon,
            tags: vec![],
            parts: vec![
                vec![(0.0, 0.0), (10.0, 0.0), (10.0, 10.0)],
                vec![(2.0, 2.0), (3.0, 2.0), (3.0, 3.0)],
            ],
        };
        let layer = a.with_features(vec![ring.clone()]);
        let t = Tile {
            layers: vec![layer],
        };
        let back = Tile::decode(&t.encode()).unwrap();
        assert_eq!(back.layers[0].features[0].parts, ring.parts);
        assert_eq!(back.layers[0].features[0].id, Some(7));
    }

    #[test]
    fn rejects_truncated_geometry() {
        assert!(decode_geometry(&[9, 0], GeomType::Point).is_err());
    }
}
