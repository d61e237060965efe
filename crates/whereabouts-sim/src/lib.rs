//! whereabouts-sim: a deterministic radio-environment simulator. It builds a
//! simulated world of cell towers and WiFi access points on a real coastline, the
//! crowdsourced station database a user would import, and `/process` requests
//! with known ground truth; and, separately, large synthetic OpenCelliD exports
//! for import-speed tests. Every output is a pure function of the seed.

pub mod crowd;
pub mod family;
pub mod geo;
pub mod model;
pub mod output;
pub mod rng;
pub mod scale;
pub mod scenarios;
pub mod walks;
pub mod world;
