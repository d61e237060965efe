//! The learned-mast file: the site masts our learner fitted from timing advances
//! (`learn::masts`), one row a site, as `GET /v2/sync` hands them to another server
//! (`crate::sync` writes it). An import merges its masts into those the new generation keeps,
//! each with the site's earlier one (`learn::masts::merge`), and keeps them while the
//! database holds a learned cell of their site. Few rows (one a learned site): read in order,
//! without the station files' parser threads.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};

use super::source::{keep_bad, Ctx};
use super::{FileReport, ImportError, Phase, Progress, SourceKind};
use crate::radio::Radio;
use crate::sites::SiteKey;
use crate::store::netstats::LearnedMast;

/// The learned-mast file header. `site` is the site's first cell id (`sites::site_cids`),
/// `updated` unix seconds of the day the mast last changed.
pub const MAST_HEADER: &str = "radio,mcc,net,site,lat,lon,sightings,updated";

/// Whether `line` is [`MAST_HEADER`], as the station files' headers are told.
pub(crate) fn is_mast_header(line: &[u8]) -> bool {
    super::parse::is_header(line, MAST_HEADER)
}

/// One row, or why it is refused.
fn parse_row(line: &str) -> Result<(SiteKey, LearnedMast), String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() != 8 {
        return Err(format!("{} fields where the header has 8", f.len()));
    }
    let radio = Radio::parse(f[0]).ok_or_else(|| format!("unknown radio {:?}", f[0]))?;
    if radio.ta_step_m().is_none() {
        return Err(format!(
            "{radio} has no timing advance, so no learned masts"
        ));
    }
    let int = |i: usize, name: &str| -> Result<i64, String> {
        f[i].parse::<i64>()
            .map_err(|_| format!("{name} {:?} is not a whole number", f[i]))
    };
    let (mcc, mnc, site) = (int(1, "mcc")?, int(2, "net")?, int(3, "site")?);
    if !(0..=999).contains(&mcc) {
        return Err(format!("mcc {mcc} out of range (0..=999)"));
    }
    if !(0..=radio.max_mnc() as i64).contains(&mnc) {
        return Err(format!(
            "net {mnc} out of range (0..={} for {radio})",
            radio.max_mnc()
        ));
    }
    if site < 0 || site as u64 > radio.max_cid() {
        return Err(format!(
            "site {site} out of range (0..={} for {radio})",
            radio.max_cid()
        ));
    }
    let key = SiteKey::of_cell(radio, mcc as u16, mnc as u16, site as u64)
        .filter(|k| k.site == site as u64)
        .ok_or_else(|| format!("site {site} is not the first cell id of a {radio} site"))?;
    let coordinate = |i: usize, name: &str, max: f64| -> Result<f64, String> {
        f[i].parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && v.abs() <= max)
            .ok_or_else(|| format!("{name} {:?} is not a number within ±{max}", f[i]))
    };
    let lat = coordinate(4, "lat", 90.0)?;
    let lon = coordinate(5, "lon", 180.0)?;
    let sightings = int(6, "sightings")?;
    if !(1..=u32::MAX as i64).contains(&sightings) {
        return Err(format!(
            "sightings {sightings} out of range (1..={})",
            u32::MAX
        ));
    }
    let updated = int(7, "updated")?;
    if updated < 0 {
        return Err(format!("updated {updated} is before 1970"));
    }
    Ok((
        key,
        LearnedMast {
            site: key.site,
            lat,
            lon,
            sightings: sightings as u32,
            updated,
        },
    ))
}

/// Reads the rows after the header; they go to `ctx.masts` (when importing), merged by site.
pub(crate) fn read_masts(
    rows: Rows,
    reader: &mut dyn Read,
    ctx: &mut Ctx,
) -> Result<FileReport, ImportError> {
    rows.read(reader, ctx, |ctx, line| {
        let (site, m) = parse_row(line)?;
        if let Some(masts) = ctx.masts.as_deref_mut() {
            crate::learn::masts::keep_one(masts, site, m);
        }
        Ok(())
    })
}

/// A learned file (masts, `super::levels`) after its header: few rows (one a learned site or
/// cell), read in order, without the station files' parser threads.
pub(crate) struct Rows<'a> {
    /// The bytes already read past the header; the reader given to [`Rows::read`] has the rest.
    pub head: &'a [u8],
    pub name: &'a str,
    /// The header's line number.
    pub line_no: u64,
    /// Bytes read so far, of `total`, for progress.
    pub counter: &'a dyn Fn() -> u64,
    pub total: u64,
    /// [`SourceKind::MastCsv`] or [`SourceKind::LevelsCsv`].
    pub kind: SourceKind,
}

impl Rows<'_> {
    /// Hands each row to `row`, which takes it (into `ctx`, when importing) or says why not.
    pub(crate) fn read(
        self,
        reader: &mut dyn Read,
        ctx: &mut Ctx,
        mut row: impl FnMut(&mut Ctx, &str) -> Result<(), String>,
    ) -> Result<FileReport, ImportError> {
        let name = self.name;
        let mut report = FileReport {
            file: name.to_string(),
            kind: self.kind,
            rows: 0,
            accepted: 0,
            rejected: 0,
            bad_lines: Vec::new(),
        };
        let max_bad = ctx.opts.max_error_lines;
        let lines = BufReader::new(self.head.chain(reader)).split(b'\n');
        for (i, line) in lines.enumerate() {
            let line = line.map_err(|e| ImportError::Io(format!("{name}: {e}")))?;
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches('\r');
            if text.trim().is_empty() {
                continue;
            }
            report.rows += 1;
            match row(ctx, text) {
                Ok(()) => report.accepted += 1,
                Err(why) => keep_bad(&mut report, max_bad, self.line_no + 1 + i as u64, || why),
            }
            if report.rows.is_multiple_of(8192) {
                let rows = report.rows;
                ctx.reporter.report(false, || Progress {
                    file: name.to_string(),
                    bytes_done: (self.counter)(),
                    bytes_total: self.total,
                    rows,
                    phase: Phase::Reading,
                })?;
            }
        }
        Ok(report)
    }
}

/// The masts an import read, by site.
pub(crate) type ReadMasts = BTreeMap<SiteKey, LearnedMast>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_checked_field_by_field() {
        let (site, m) = parse_row("LTE,608,2,264192,14.7,-17.4,40,1800000000").unwrap();
        assert_eq!(
            (site.radio, site.mcc, site.mnc, site.site),
            (Radio::Lte, 608, 2, 1032 << 8)
        );
        assert_eq!((m.sightings, m.updated), (40, 1_800_000_000));
        for (row, why) in [
            ("LTE,608,2,264192,14.7,-17.4,40", "7 fields"),
            ("WIFI,608,2,264192,14.7,-17.4,40,0", "unknown radio"),
            ("CDMA,608,2,264192,14.7,-17.4,40,0", "no timing advance"),
            ("LTE,1000,2,264192,14.7,-17.4,40,0", "mcc 1000 out of range"),
            ("LTE,608,2,264193,14.7,-17.4,40,0", "not the first cell id"),
            (
                "LTE,608,2,x,14.7,-17.4,40,0",
                "site \"x\" is not a whole number",
            ),
            ("LTE,608,2,264192,91,-17.4,40,0", "lat \"91\""),
            ("LTE,608,2,264192,14.7,NaN,40,0", "lon \"NaN\""),
            (
                "LTE,608,2,264192,14.7,-17.4,0,0",
                "sightings 0 out of range",
            ),
            ("LTE,608,2,264192,14.7,-17.4,40,-1", "before 1970"),
        ] {
            let err = parse_row(row).unwrap_err();
            assert!(err.contains(why), "{row}: {err}");
        }
        assert!(is_mast_header(
            b"Radio, mcc,net,site,lat,lon,sightings,updated"
        ));
        assert!(!is_mast_header(b"radio,mcc,net,site,lat,lon,sightings"));
    }
}
