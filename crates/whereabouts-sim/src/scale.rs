//! Scale mode: a large synthetic OpenCelliD export, streamed.

pub fn run(_seed: u64, _rows: u64, _out: &str, _gz: bool) -> Result<(), String> {
    Err("scale mode not implemented yet".into())
}
