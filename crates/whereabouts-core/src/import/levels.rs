//! The learned-level file: the positions by received level of our learned cells
//! (`learn::estimate`), and in its second form by timing advance too, one row a cell, as
//! `GET /v2/sync` hands them to another server (`crate::sync` writes it). An import sets each
//! cell's levels (and advances, when the file has them) in those the new generation keeps,
//! replacing the cell's earlier ones, and keeps them while the database holds the cell as
//! learned.

use std::collections::BTreeMap;
use std::io::Read;

use super::masts::Rows;
use super::source::Ctx;
use super::{FileReport, ImportError};
use crate::radio::Radio;
use crate::store::netstats::{
    parse_advances_text, parse_levels_text, AdvancePoint, CellId, LevelPoint,
};
use crate::store::record::cell_key;

/// The learned-level file header. `levels` is the cell's points as the statistics file writes
/// them (`netstats::levels_text`): ascending by level, each `dbm/lat/lon/spread` (whole dBm,
/// degrees, metres), separated by `;`.
pub const LEVELS_HEADER: &str = "radio,mcc,net,area,cell,levels";

/// The learned-level file with advances: `advances` is the cell's points by timing advance as
/// the statistics file writes them (`netstats::advances_text`: ascending, each
/// `steps/lat/lon/spread`). Either of `levels` and `advances` may be empty, not both.
pub const LEVELS_ADVANCES_HEADER: &str = "radio,mcc,net,area,cell,levels,advances";

/// Whether `line` is [`LEVELS_HEADER`] or [`LEVELS_ADVANCES_HEADER`], as the station files'
/// headers are told.
pub(crate) fn is_levels_header(line: &[u8]) -> bool {
    super::parse::is_header(line, LEVELS_HEADER) || has_advances(line)
}

/// Whether `line` is [`LEVELS_ADVANCES_HEADER`].
pub(crate) fn has_advances(line: &[u8]) -> bool {
    super::parse::is_header(line, LEVELS_ADVANCES_HEADER)
}

/// One row, or why it is refused: the cell, its levels, and with `advances` (the file's
/// second form) its advances.
fn parse_row(line: &str, advances: bool) -> Result<(CellId, ReadPoints), String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let fields = if advances { 7 } else { 6 };
    if f.len() != fields {
        return Err(format!("{} fields where the header has {fields}", f.len()));
    }
    let radio = Radio::parse(f[0]).ok_or_else(|| format!("unknown radio {:?}", f[0]))?;
    let int = |i: usize, name: &str| -> Result<i64, String> {
        f[i].parse::<i64>()
            .map_err(|_| format!("{name} {:?} is not a whole number", f[i]))
    };
    let (mcc, mnc, lac, cid) = (
        int(1, "mcc")?,
        int(2, "net")?,
        int(3, "area")?,
        int(4, "cell")?,
    );
    for (name, v, max) in [
        ("mcc", mcc, 999),
        ("net", mnc, radio.max_mnc() as i64),
        ("area", lac, radio.max_lac() as i64),
        ("cell", cid, radio.max_cid() as i64),
    ] {
        if !(0..=max).contains(&v) {
            return Err(format!("{name} {v} out of range (0..={max} for {radio})"));
        }
    }
    let points = if advances {
        if f[5].is_empty() && f[6].is_empty() {
            return Err("neither levels nor advances".to_string());
        }
        let levels = if f[5].is_empty() {
            Vec::new()
        } else {
            parse_levels_text(f[5])?
        };
        let advances = if f[6].is_empty() {
            Vec::new()
        } else {
            parse_advances_text(f[6])?
        };
        (levels, Some(advances))
    } else {
        (parse_levels_text(f[5])?, None)
    };
    let cell = (
        radio,
        mcc as u16,
        mnc as u16,
        cell_key(radio, lac as u32, cid as u64),
    );
    Ok((cell, points))
}

/// Reads the rows after the header (with `advances`, the file's second form); they go to
/// `ctx.levels` (when importing), one entry a cell, a later row replacing an earlier one.
pub(crate) fn read_levels(
    rows: Rows,
    reader: &mut dyn Read,
    ctx: &mut Ctx,
    advances: bool,
) -> Result<FileReport, ImportError> {
    rows.read(reader, ctx, |ctx, line| {
        let (cell, points) = parse_row(line, advances)?;
        if let Some(levels) = ctx.levels.as_deref_mut() {
            levels.insert(cell, points);
        }
        Ok(())
    })
}

/// A cell's levels as a file gave them, and its advances when the file has them.
pub(crate) type ReadPoints = (Vec<LevelPoint>, Option<Vec<AdvancePoint>>);

/// The levels (and advances) an import read, by cell.
pub(crate) type ReadLevels = BTreeMap<CellId, ReadPoints>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_checked_field_by_field() {
        let (cell, (points, advances)) = parse_row(
            "LTE,272,1,100,2304001,-100/51.9/-8.47/35;-98/51.91/-8.46/40",
            false,
        )
        .unwrap();
        assert_eq!(advances, None);
        assert_eq!(
            cell,
            (Radio::Lte, 272, 1, cell_key(Radio::Lte, 100, 2_304_001))
        );
        assert_eq!(points.len(), 2);
        assert_eq!(
            (points[1].dbm, points[1].lat, points[1].spread_m),
            (-98, 51.91, 40.0)
        );
        for (row, why) in [
            ("LTE,272,1,100,2304001", "5 fields"),
            ("WIFI,272,1,100,2304001,-100/51.9/-8.47/35", "unknown radio"),
            (
                "LTE,1000,1,100,2304001,-100/51.9/-8.47/35",
                "mcc 1000 out of range",
            ),
            ("LTE,272,1,x,2304001,-100/51.9/-8.47/35", "area \"x\""),
            (
                "LTE,272,1,100,2304001,-100/91/-8.47/35",
                "not dbm/lat/lon/spread",
            ),
            (
                "LTE,272,1,100,2304001,-100.5/51.9/-8.47/35",
                "not dbm/lat/lon/spread",
            ),
            (
                "LTE,272,1,100,2304001,-100/51.9/-8.47",
                "not dbm/lat/lon/spread",
            ),
            (
                "LTE,272,1,100,2304001,-100/51.9/-8.47/-1",
                "not dbm/lat/lon/spread",
            ),
            ("LTE,272,1,100,2304001,", "not dbm/lat/lon/spread"),
            (
                "LTE,272,1,100,2304001,-98/51.9/-8.47/35;-100/51.9/-8.47/35",
                "does not follow",
            ),
        ] {
            let err = parse_row(row, false).unwrap_err();
            assert!(err.contains(why), "{row}: {err}");
        }
        assert!(is_levels_header(b"Radio, mcc,net,area,cell,levels"));
        assert!(!has_advances(b"Radio, mcc,net,area,cell,levels"));
        assert!(!is_levels_header(
            b"radio,mcc,net,site,lat,lon,sightings,updated"
        ));
    }

    #[test]
    fn the_second_form_carries_advances_beside_the_levels() {
        assert!(is_levels_header(LEVELS_ADVANCES_HEADER.as_bytes()));
        assert!(has_advances(LEVELS_ADVANCES_HEADER.as_bytes()));
        let (_, (levels, advances)) = parse_row(
            "LTE,272,1,100,2304001,-100/51.9/-8.47/35,3/51.91/-8.46/40;4/51.92/-8.46/30",
            true,
        )
        .unwrap();
        assert_eq!(levels.len(), 1);
        let advances = advances.unwrap();
        assert_eq!(
            (advances[1].steps, advances[1].lat, advances[1].spread_m),
            (4, 51.92, 30.0)
        );
        // Either column may be empty, not both.
        let (_, (levels, advances)) =
            parse_row("LTE,272,1,100,2304001,,3/51.91/-8.46/40", true).unwrap();
        assert!(levels.is_empty() && advances.is_some_and(|a| a.len() == 1));
        let (_, (_, advances)) =
            parse_row("LTE,272,1,100,2304001,-100/51.9/-8.47/35,", true).unwrap();
        assert_eq!(advances, Some(Vec::new()));
        for (row, why) in [
            ("LTE,272,1,100,2304001,,", "neither levels nor advances"),
            (
                "LTE,272,1,100,2304001,-100/51.9/-8.47/35",
                "6 fields where the header has 7",
            ),
            (
                "LTE,272,1,100,2304001,,4/1/2/40;3/1/2/40",
                "does not follow",
            ),
            (
                "LTE,272,1,100,2304001,,-1/1/2/40",
                "not steps/lat/lon/spread",
            ),
        ] {
            let err = parse_row(row, true).unwrap_err();
            assert!(err.contains(why), "{row}: {err}");
        }
    }
}
