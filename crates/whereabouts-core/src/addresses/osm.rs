//! OpenStreetMap `.osm.pbf` extracts: addresses (`addr:housenumber` + `addr:street`, with
//! `addr:postcode`, `addr:city`, `addr:suburb`) on nodes and ways, and named roads
//! (`highway=*` + `name`) as polylines.
//!
//! Two passes over the file keep memory to what is kept: the first lists the nodes that the
//! tagged ways use; the second stores only those nodes' locations (a sorted vector of ids
//! and one of positions: 16 bytes a node) and, as extracts list nodes before ways, places the
//! ways when it reaches them. A way whose nodes the file lacks (a clipped extract) is a
//! rejected row, reported by its OSM id.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use osmpbf::{BlobDecode, BlobReader, Element, PrimitiveBlock};

use super::builder::{AddressExtra, AddressSet};
use crate::import::source::{io_err, keep_bad, Counting};
use crate::import::{FileReport, ImportError, Phase, Progress, Reporter, SourceKind};

/// The tags of one element that matter here.
#[derive(Default)]
struct Tags<'a> {
    number: Option<&'a str>,
    street: Option<&'a str>,
    postcode: Option<&'a str>,
    city: Option<&'a str>,
    suburb: Option<&'a str>,
    highway: bool,
    name: Option<&'a str>,
}

impl<'a> Tags<'a> {
    fn read(tags: impl Iterator<Item = (&'a str, &'a str)>) -> Tags<'a> {
        let mut t = Tags::default();
        for (k, v) in tags {
            match k {
                "addr:housenumber" => t.number = Some(v),
                "addr:street" => t.street = Some(v),
                "addr:postcode" => t.postcode = Some(v),
                "addr:city" => t.city = Some(v),
                "addr:suburb" => t.suburb = Some(v),
                "highway" => t.highway = true,
                "name" => t.name = Some(v),
                _ => {}
            }
        }
        t
    }

    fn address(&self) -> Option<(&'a str, &'a str)> {
        Some((
            self.number.filter(|s| !s.trim().is_empty())?,
            self.street.filter(|s| !s.trim().is_empty())?,
        ))
    }

    fn road(&self) -> Option<&'a str> {
        self.name.filter(|n| self.highway && !n.trim().is_empty())
    }

    fn extra(&self) -> AddressExtra<'a> {
        AddressExtra {
            postcode: self.postcode,
            city: self.city,
            suburb: self.suburb,
        }
    }
}

/// Whether a file starts like an OSM PBF: a big-endian header length, then a BlobHeader
/// whose type field is "OSMHeader".
pub fn looks_like_pbf(head: &[u8]) -> bool {
    head.len() >= 17 && head[..2] == [0, 0] && head[4] == 0x0a && head[6..15] == *b"OSMHeader"
}

type Blocks = BlobReader<Counting<BufReader<File>>>;

fn open(path: &Path, counter: &Arc<AtomicU64>) -> Result<Blocks, ImportError> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    Ok(BlobReader::new(Counting {
        inner: BufReader::with_capacity(1 << 18, file),
        n: counter.clone(),
    }))
}

/// Calls `f` with every data block of the file, in order.
fn each_block(
    path: &Path,
    counter: &Arc<AtomicU64>,
    mut f: impl FnMut(&PrimitiveBlock) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let bad = |e: osmpbf::Error| {
        ImportError::Format(format!("{}: not a valid OSM PBF file: {e}", path.display()))
    };
    for blob in open(path, counter)? {
        match blob.map_err(bad)?.decode().map_err(bad)? {
            BlobDecode::OsmData(block) => f(&block)?,
            BlobDecode::OsmHeader(_) | BlobDecode::Unknown(_) => {}
        }
    }
    Ok(())
}

/// Node locations for the nodes the tagged ways use.
struct Locations {
    ids: Vec<i64>,
    /// 1e-7 degree; `None` until the node is seen.
    at: Vec<Option<(i32, i32)>>,
}

impl Locations {
    fn set(&mut self, id: i64, lat: i32, lon: i32) {
        if let Ok(i) = self.ids.binary_search(&id) {
            self.at[i] = Some((lat, lon));
        }
    }

    fn get(&self, id: i64) -> Option<(i32, i32)> {
        self.at[self.ids.binary_search(&id).ok()?]
    }
}

/// Reads one `.osm.pbf` file into `set`. `rows` are the elements with address or road tags.
pub(crate) fn read(
    path: &Path,
    set: &mut AddressSet,
    max_bad: usize,
    reporter: &mut Reporter,
) -> Result<FileReport, ImportError> {
    let name = path.display().to_string();
    let total = std::fs::metadata(path).map_err(|e| io_err(path, e))?.len();
    let counter = Arc::new(AtomicU64::new(0));
    // Progress counts both passes over the file.
    let progress = |rows: u64| Progress {
        file: name.clone(),
        bytes_done: counter.load(Ordering::Relaxed),
        bytes_total: total * 2,
        rows,
        phase: Phase::Reading,
    };
    reporter.report(true, || progress(0))?;

    let mut ids: Vec<i64> = Vec::new();
    each_block(path, &counter, |block| {
        for group in block.groups() {
            for way in group.ways() {
                let t = Tags::read(way.tags());
                if t.address().is_some() || t.road().is_some() {
                    ids.extend(way.refs());
                }
            }
        }
        reporter.report(false, || progress(0))
    })?;
    ids.sort_unstable();
    ids.dedup();
    let mut nodes = Locations {
        at: vec![None; ids.len()],
        ids,
    };

    let mut report = FileReport {
        file: name.clone(),
        kind: SourceKind::OsmPbf,
        rows: 0,
        accepted: 0,
        rejected: 0,
        bad_lines: Vec::new(),
    };
    let mut points: Vec<(i32, i32)> = Vec::new();
    each_block(path, &counter, |block| {
        block.for_each_element(|e| match e {
            Element::Node(n) => add_node(
                (&mut nodes, &mut report, set),
                n.id(),
                n.decimicro_lat(),
                n.decimicro_lon(),
                Tags::read(n.tags()),
            ),
            Element::DenseNode(n) => add_node(
                (&mut nodes, &mut report, set),
                n.id(),
                n.decimicro_lat(),
                n.decimicro_lon(),
                Tags::read(n.tags()),
            ),
            Element::Way(w) => {
                let t = Tags::read(w.tags());
                let (address, road) = (t.address(), t.road());
                if address.is_none() && road.is_none() {
                    return;
                }
                report.rows += 1;
                points.clear();
                for id in w.refs() {
                    match nodes.get(id) {
                        Some(p) => points.push(p),
                        None => {
                            keep_bad(&mut report, max_bad, w.id() as u64, || {
                                format!("way {}: node {id} is not in the file", w.id())
                            });
                            return;
                        }
                    }
                }
                if points.is_empty() {
                    keep_bad(&mut report, max_bad, w.id() as u64, || {
                        format!("way {}: no nodes", w.id())
                    });
                    return;
                }
                report.accepted += 1;
                if let Some((number, street)) = address {
                    let (lat, lon) = centroid(&points);
                    set.add_address(lat, lon, number, street, t.extra());
                }
                if let Some(name) = road {
                    let mut line = points.clone();
                    line.dedup();
                    set.add_road(name, line);
                }
            }
            Element::Relation(_) => {}
        });
        let rows = report.rows;
        reporter.report(false, || progress(rows))
    })?;
    let rows = report.rows;
    reporter.report(true, || progress(rows))?;
    Ok(report)
}

/// A node of either encoding: its location if a way needs it, its address if it has one.
fn add_node(
    (nodes, report, set): (&mut Locations, &mut FileReport, &mut AddressSet),
    id: i64,
    lat: i32,
    lon: i32,
    t: Tags,
) {
    nodes.set(id, lat, lon);
    if let Some((number, street)) = t.address() {
        report.rows += 1;
        report.accepted += 1;
        set.add_address(lat, lon, number, street, t.extra());
    }
}

/// The mean of a way's vertices (a closed way's repeated first vertex counted once).
fn centroid(points: &[(i32, i32)]) -> (i32, i32) {
    let pts = match points {
        [first, rest @ .., last] if first == last && !rest.is_empty() => {
            &points[..points.len() - 1]
        }
        _ => points,
    };
    let n = pts.len() as f64;
    let lat = pts.iter().map(|p| p.0 as f64).sum::<f64>() / n;
    let lon = pts.iter().map(|p| p.1 as f64).sum::<f64>() / n;
    (lat.round() as i32, lon.round() as i32)
}
