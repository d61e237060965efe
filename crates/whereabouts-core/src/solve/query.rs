//! What the solver is asked and what it answers, in compact numbers: the
//! TypeScript layer has already validated the request against the spec.

use crate::radio::Radio;

/// A cell the device sees. The first cell of a query is the serving cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CellObs {
    /// None: the request named no radio; the ids decide which radios are tried.
    pub radio: Option<Radio>,
    /// None: a CDMA cell sent without mcc (allowed by the spec); every mcc of the SID is tried.
    pub mcc: Option<u16>,
    pub mnc: u16,
    pub lac: u32,
    pub cid: u64,
    /// dBm (RSSI, RSCP or RSRP by radio).
    pub signal: Option<f64>,
    pub asu: Option<f64>,
    pub ta: Option<f64>,
    pub psc: Option<u16>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WifiObs {
    /// 48-bit MAC.
    pub bssid: u64,
    pub signal: Option<f64>,
    pub frequency: Option<f64>,
}

/// Fallback switches and border strictness (spec 2.6 and 2.7).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// 0 off, 1 when nothing better, 2 forced.
    pub lacf: u8,
    pub scf: bool,
    pub ipf: bool,
    /// 0 strict (on land), 1 within 5 km of land, 2 within 15 km.
    pub bt: u8,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            lacf: 1,
            scf: true,
            ipf: false,
            bt: 1,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Query<'a> {
    pub cells: &'a [CellObs],
    pub wifi: &'a [WifiObs],
    pub ip: Option<&'a str>,
    pub options: Options,
}

/// Which fallback produced an answer (the spec's `fallback` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Fallback {
    None = 0,
    Lacf = 1,
    Scf = 2,
    Ipf = 3,
}

impl Fallback {
    /// Every fallback, in code order.
    pub const ALL: [Fallback; 4] = [Fallback::None, Fallback::Lacf, Fallback::Scf, Fallback::Ipf];

    pub fn name(self) -> Option<&'static str> {
        match self {
            Fallback::None => None,
            Fallback::Lacf => Some("lacf"),
            Fallback::Scf => Some("scf"),
            Fallback::Ipf => Some("ipf"),
        }
    }
}

/// Which evidence decided the answer; reported for evaluation and metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Source {
    Wifi = 0,
    Cells = 1,
    Area = 2,
    Ip = 3,
    /// The known sectors of the site of a cell the database lacks (an area answer, finer).
    Site = 4,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Answer {
    pub lat: f64,
    pub lon: f64,
    /// Radius in metres that holds the true position with [`super::CONFIDENCE`].
    pub accuracy_m: f64,
    pub fallback: Fallback,
    /// Based on a single measurement, on stations older than 90 days, or on a LAC fallback.
    pub aged: bool,
    pub source: Source,
    /// A single cell on its mast's ring by its timing advance, placed on it or answered at a
    /// published mast (its radius is the ring's, `solve::cells`): a class of its own in the
    /// radius model.
    pub ring: bool,
    /// A single learned cell placed by the level it was heard at (its radius is that level's
    /// spread, `solve::cells`): a class of its own in the radius model.
    pub level: bool,
}
