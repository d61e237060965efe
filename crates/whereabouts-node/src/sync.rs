//! `changesPage`: one page of stations changed in a time window (the body of
//! `GET /v2/sync`), built on a worker thread: a page may scan millions of stations.

use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, Buffer};
use napi::{Env, Error, Result, Status, Task};
use napi_derive::napi;
use whereabouts_core::solve::Locator;
use whereabouts_core::store::changes::{StationKey, Window};
use whereabouts_core::sync::{changes_page, Page, PageKind, PageRequest};

#[napi(object)]
pub struct ChangesQuery {
    /// Unix seconds; stations with `since <= updated < until`.
    pub since: f64,
    pub until: f64,
    /// The previous page's `next`.
    pub cursor: Option<String>,
    pub max_stations: u32,
    pub max_scanned: f64,
    /// The receiver reads learned cells' advances: `levels` pages carry them in a column of
    /// their own (`LEVELS_ADVANCES_HEADER`). Absent: the level file older receivers read.
    pub advances: Option<bool>,
}

#[napi(object)]
pub struct ChangesPage {
    /// Gzip-compressed CSV in an import format; empty when `stations` is 0.
    pub body: Buffer,
    /// `cells` (OpenCelliD export header), `wifi` (WiFi station header), `masts` (learned
    /// site masts, `MAST_HEADER`) or `levels` (learned cells' positions by level,
    /// `LEVELS_HEADER`, and by advance when asked, `LEVELS_ADVANCES_HEADER`); null when empty.
    #[napi(ts_type = "'cells' | 'wifi' | 'masts' | 'levels' | null")]
    pub kind: Option<String>,
    /// Rows in `body`: stations, masts on a `masts` page, cells on a `levels` page.
    pub stations: f64,
    pub scanned: f64,
    pub next: Option<String>,
}

pub struct ChangesTask {
    pub(crate) locator: Arc<Locator>,
    pub(crate) request: PageRequest,
}

impl Task for ChangesTask {
    type Output = Page;
    type JsValue = ChangesPage;

    fn compute(&mut self) -> Result<Page> {
        let (locator, request) = (&self.locator, &self.request);
        crate::guarded("changesPage", || {
            changes_page(&locator.database(), request).map_err(crate::err)
        })
    }

    fn resolve(&mut self, _env: Env, p: Page) -> Result<ChangesPage> {
        Ok(ChangesPage {
            body: p.body.into(),
            kind: p.kind.map(|k| {
                match k {
                    PageKind::Cells => "cells",
                    PageKind::Wifi => "wifi",
                    PageKind::Masts => "masts",
                    PageKind::Levels => "levels",
                }
                .to_string()
            }),
            stations: p.stations as f64,
            scanned: p.scanned as f64,
            next: p.next.map(|k| k.to_string()),
        })
    }
}

/// Checks a query from JS and turns it into a page request.
pub fn page_request(q: &ChangesQuery) -> Result<PageRequest> {
    let invalid = |m: &str| Error::new(Status::InvalidArg, m.to_string());
    if !q.since.is_finite() || !q.until.is_finite() {
        return Err(invalid("since and until must be numbers"));
    }
    let after = match q.cursor.as_deref() {
        None | Some("") => None,
        Some(c) => Some(StationKey::parse(c).ok_or_else(|| invalid("invalid cursor"))?),
    };
    Ok(PageRequest {
        window: Window {
            since: q.since as i64,
            until: q.until as i64,
        },
        after,
        max_stations: q.max_stations.max(1) as usize,
        max_scanned: q.max_scanned.max(1.0) as u64,
        advances: q.advances.unwrap_or(false),
    })
}

pub fn task(locator: Arc<Locator>, q: &ChangesQuery) -> Result<AsyncTask<ChangesTask>> {
    Ok(AsyncTask::new(ChangesTask {
        locator,
        request: page_request(q)?,
    }))
}
