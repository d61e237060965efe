//! Radio access technologies and the per-radio identifier ranges of the spec (table 2.3).

use std::fmt;

/// Metres of distance per timing-advance step of a serving cell (priors, from the standards):
/// GSM's step is one bit period (48/13 µs) of round trip, LTE's 16 Ts; each halved for the
/// round trip.
pub const GSM_TA_STEP_M: f64 = 553.5;
pub const LTE_TA_STEP_M: f64 = 78.12;

impl Radio {
    /// Metres of distance per timing-advance step of a serving cell of this radio, for those
    /// that report one (NR and NB-IoT read as LTE's).
    pub fn ta_step_m(self) -> Option<f64> {
        match self {
            Radio::Gsm => Some(GSM_TA_STEP_M),
            Radio::Lte | Radio::Nr | Radio::Nbiot => Some(LTE_TA_STEP_M),
            Radio::Umts | Radio::Cdma => None,
        }
    }
}

/// A radio access technology. The discriminants are stable: they are stored in
/// station files and cross the Node boundary as numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Radio {
    Gsm = 0,
    Cdma = 1,
    Umts = 2,
    Lte = 3,
    Nbiot = 4,
    Nr = 5,
}

impl Radio {
    pub const ALL: [Radio; 6] = [
        Radio::Gsm,
        Radio::Cdma,
        Radio::Umts,
        Radio::Lte,
        Radio::Nbiot,
        Radio::Nr,
    ];

    pub fn from_code(code: u8) -> Option<Radio> {
        Radio::ALL.get(code as usize).copied()
    }

    /// Parses the radio names of OpenCelliD/MLS exports and of the spec, case-insensitively.
    pub fn parse(name: &str) -> Option<Radio> {
        let n = name.trim();
        let eq = |s: &str| n.eq_ignore_ascii_case(s);
        if eq("gsm") {
            Some(Radio::Gsm)
        } else if eq("cdma") {
            Some(Radio::Cdma)
        } else if eq("umts") || eq("wcdma") {
            Some(Radio::Umts)
        } else if eq("lte") {
            Some(Radio::Lte)
        } else if eq("nbiot") || eq("nb-iot") {
            Some(Radio::Nbiot)
        } else if eq("nr") {
            Some(Radio::Nr)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Radio::Gsm => "gsm",
            Radio::Cdma => "cdma",
            Radio::Umts => "umts",
            Radio::Lte => "lte",
            Radio::Nbiot => "nbiot",
            Radio::Nr => "nr",
        }
    }

    /// Largest valid LAC/TAC (or NID for CDMA).
    pub fn max_lac(self) -> u32 {
        match self {
            Radio::Cdma => 65534,
            Radio::Nr => 16_777_215,
            _ => 65533,
        }
    }

    /// Largest valid cell id.
    pub fn max_cid(self) -> u64 {
        match self {
            Radio::Gsm | Radio::Cdma => 65535,
            Radio::Nr => 68_719_476_735,
            _ => 268_435_455,
        }
    }

    /// Largest valid mnc (the SID for CDMA).
    pub fn max_mnc(self) -> u32 {
        match self {
            Radio::Cdma => 32767,
            _ => 999,
        }
    }

    /// Whether a 28-bit cell id of this radio may be seen by devices as its low 16 bits only.
    pub fn has_short_cid(self) -> bool {
        matches!(self, Radio::Umts | Radio::Lte)
    }
}

impl fmt::Display for Radio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for r in Radio::ALL {
            assert_eq!(Radio::from_code(r as u8), Some(r));
            assert_eq!(Radio::parse(r.name()), Some(r));
        }
        assert_eq!(Radio::parse("LTE"), Some(Radio::Lte));
        assert_eq!(Radio::parse("wifi"), None);
        assert_eq!(Radio::from_code(6), None);
    }
}
