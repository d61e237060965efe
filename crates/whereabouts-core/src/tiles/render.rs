//! Raster tiles drawn from the vector tiles with a style: fills, lines and circles with
//! tiny-skia, point labels from the SDF glyphs (halos included), placed without overlaps and
//! with a buffer of neighbouring tiles so that a label near an edge is drawn whole on both
//! tiles it touches. Zooms past the tileset's deepest level draw the ancestor tile's data
//! magnified (overzoom). Label placement looks only at point features: line labels are not drawn.

use std::collections::HashMap;
use std::sync::Arc;

use tiny_skia::{
    FillRule, LineCap, LineJoin, Paint, PathBuilder, Pixmap, Rect, Stroke, StrokeDash, Transform,
};

use tiny_skia::PixmapPaint;

use super::glyphs::{self, Font, Shaped, TextPaint, SDF_SIZE};
use super::mvt::{Feature, GeomType, Layer, Tile};
use super::sprite::Sprite;
use super::style::{Color, Ctx, Kind, Style, StyleLayer};
use super::tileset::Tileset;

/// The deepest zoom rendered.
pub const MAX_ZOOM: u8 = 22;

/// Why a tile was not rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderError {
    /// No such tile: zoom out of range, or x/y outside the zoom level.
    NotFound,
    /// The tileset or an encoder failed.
    Failed(String),
}

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RenderError::NotFound => f.write_str("no such tile"),
            RenderError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RenderError {}

/// Renders tiles of one tileset; shareable between threads.
pub struct Renderer {
    tileset: Arc<Tileset>,
    fonts: HashMap<String, Font>,
}

/// A label waiting for placement.
struct Candidate<'a> {
    /// Placement order, the same on every tile: upper style layers first (as MapLibre places
    /// them), then by sort key, then by global y and x.
    order: (usize, f64, f64, f64),
    layer: &'a StyleLayer,
    shaped: Shaped,
    font: &'a Font,
    /// Top-left corner and size of the text box, in output pixels (no text: width 0).
    x: f32,
    y: f32,
    w: f32,
    h: f32,
    paint: TextPaint,
    /// The icon, its top-left corner and its scale (output pixels per sprite pixel).
    icon: Option<(&'a Pixmap, f32, f32, f32)>,
}

impl Candidate<'_> {
    /// The box that must stay clear of other labels: text and icon together.
    fn bounds(&self) -> (f32, f32, f32, f32) {
        let mut b = if self.w > 0.0 {
            (self.x, self.y, self.x + self.w, self.y + self.h)
        } else {
            (f32::MAX, f32::MAX, f32::MIN, f32::MIN)
        };
        if let Some((pm, x, y, s)) = self.icon {
            b = (
                b.0.min(x),
                b.1.min(y),
                b.2.max(x + pm.width() as f32 * s),
                b.3.max(y + pm.height() as f32 * s),
            );
        }
        b
    }
}

impl Renderer {
    /// A renderer over `tileset`, with the glyphs of every fontstack it holds parsed once.
    pub fn new(tileset: Arc<Tileset>) -> Result<Renderer, RenderError> {
        let mut fonts = HashMap::new();
        for stack in tileset.fontstacks() {
            let mut font = Font::default();
            for range in tileset.glyph_ranges(&stack) {
                font.add_range(range)
                    .map_err(|e| RenderError::Failed(format!("glyphs of {stack}: {e}")))?;
            }
            fonts.insert(stack, font);
        }
        Ok(Renderer { tileset, fonts })
    }

    /// The tileset drawn.
    pub fn tileset(&self) -> &Tileset {
        &self.tileset
    }

    /// Renders tile `z/x/y` as a PNG of `256 * ratio` pixels a side (`ratio` 1 to 4).
    pub fn render_png(
        &self,
        style: &Style,
        sprite: Option<&Sprite>,
        z: u8,
        x: u32,
        y: u32,
        ratio: u32,
    ) -> Result<Vec<u8>, RenderError> {
        encode_png(&self.render(style, sprite, z, x, y, ratio)?)
    }

    /// Renders tile `z/x/y` into a pixmap of `256 * ratio` pixels a side.
    pub fn render(
        &self,
        style: &Style,
        sprite: Option<&Sprite>,
        z: u8,
        x: u32,
        y: u32,
        ratio: u32,
    ) -> Result<Pixmap, RenderError> {
        if z > MAX_ZOOM || z < self.tileset.minzoom || !(1..=4).contains(&ratio) {
            return Err(RenderError::NotFound);
        }
        let n = 1u64 << z;
        if u64::from(x) >= n || u64::from(y) >= n {
            return Err(RenderError::NotFound);
        }
        let size = 256 * ratio;
        let mut pm = Pixmap::new(size, size).ok_or_else(|| RenderError::Failed("pixmap".into()))?;
        let sz = z.min(self.tileset.maxzoom);
        let d = z - sz;
        let (sx, sy) = (x >> d, y >> d);
        let size_f = f64::from(size);
        let view = View {
            scale: f64::from(1u32 << d) * size_f,
            ox: f64::from(x) * size_f,
            oy: f64::from(y) * size_f,
            w: size_f,
            h: size_f,
            margin: size_f / 2.0,
        };
        let failed = |e: super::tileset::TilesetError| RenderError::Failed(e.to_string());
        let tile = self
            .tileset
            .decoded(sz, sx, sy)
            .map_err(failed)?
            .unwrap_or_default();
        let zoom = f64::from(z);
        let ratio_f = ratio as f32;

        let mut neighbours: Option<Vec<(i64, i64, Tile)>> = None;
        let mut candidates: Vec<Candidate> = vec![];
        for (li, layer) in style.layers.iter().enumerate() {
            if !layer.shown_at(zoom) {
                continue;
            }
            match layer.kind {
                Kind::Background | Kind::Fill | Kind::Line | Kind::Circle => draw_geometry(
                    &mut pm,
                    layer,
                    &tile,
                    zoom,
                    &view,
                    i64::from(sx),
                    i64::from(sy),
                    ratio_f,
                ),
                Kind::Symbol => {
                    let Some(name) = layer.source_layer.as_deref() else {
                        continue;
                    };
                    let tiles = neighbours
                        .get_or_insert_with(|| self.neighbourhood(sz, sx, sy, &view, &tile));
                    for (tx, ty, t) in tiles.iter() {
                        let Some(src) = t.layer(name) else { continue };
                        self.candidates(
                            &mut candidates,
                            li,
                            layer,
                            sprite,
                            zoom,
                            src,
                            *tx,
                            *ty,
                            &view,
                            ratio_f,
                        );
                    }
                }
                Kind::Other => {}
            }
        }
        place_labels(&mut pm, candidates, ratio_f);
        Ok(pm)
    }

    /// Renders the map of `style` centred on `(lon, lat)` at `zoom` (fractional allowed) into a
    /// pixmap of `width` x `height` pixels at pixel ratio `ratio` (1 to 4), drawn directly at
    /// that viewport rather than stitched from tile images. Each source tile under the viewport
    /// is drawn clipped to its own square, snapped to whole pixels, so the buffers that tiles
    /// share are not drawn twice; labels are placed once over the whole image, in the same order
    /// as on tiles. The world repeats east and west; beyond the poles is background.
    #[allow(clippy::too_many_arguments)]
    pub fn render_view(
        &self,
        style: &Style,
        sprite: Option<&Sprite>,
        lon: f64,
        lat: f64,
        zoom: f64,
        width: u32,
        height: u32,
        ratio: u32,
    ) -> Result<Pixmap, RenderError> {
        if !(0.0..=f64::from(MAX_ZOOM)).contains(&zoom)
            || !(1..=4).contains(&ratio)
            || !lon.is_finite()
            || !lat.is_finite()
        {
            return Err(RenderError::NotFound);
        }
        let mut pm =
            Pixmap::new(width, height).ok_or_else(|| RenderError::Failed("pixmap".into()))?;
        let sz = (zoom.floor() as u8).clamp(self.tileset.minzoom, self.tileset.maxzoom);
        let tile_px = 256.0 * f64::from(ratio) * 2f64.powf(zoom - f64::from(sz));
        let n = 1i64 << sz;
        let (fx, fy) = mercator(lon, lat);
        let (w, h) = (f64::from(width), f64::from(height));
        let view = View {
            scale: tile_px,
            ox: fx * n as f64 * tile_px - w / 2.0,
            oy: fy * n as f64 * tile_px - h / 2.0,
            w,
            h,
            margin: 128.0 * f64::from(ratio),
        };
        let failed = |e: super::tileset::TilesetError| RenderError::Failed(e.to_string());
        let mut decoded: HashMap<(u32, u32), Tile> = HashMap::new();
        let tiles_in = |pad: f64| -> Vec<(i64, i64)> {
            let c0 = ((view.ox - pad) / tile_px).floor() as i64;
            let c1 = ((view.ox + w + pad) / tile_px).floor() as i64;
            let r0 = (((view.oy - pad) / tile_px).floor() as i64).max(0);
            let r1 = (((view.oy + h + pad) / tile_px).floor() as i64).min(n - 1);
            let mut out = vec![];
            for ty in r0..=r1 {
                for tx in c0..=c1 {
                    out.push((tx, ty));
                }
            }
            out
        };
        let drawn = tiles_in(0.0);
        let labelled = tiles_in(view.margin);
        for &(tx, ty) in drawn.iter().chain(labelled.iter()) {
            let key = (tx.rem_euclid(n) as u32, ty as u32);
            if let std::collections::hash_map::Entry::Vacant(e) = decoded.entry(key) {
                let t = self
                    .tileset
                    .decoded(sz, key.0, key.1)
                    .map_err(failed)?
                    .unwrap_or_default();
                e.insert(t);
            }
        }
        let tile_of = |tx: i64, ty: i64| &decoded[&(tx.rem_euclid(n) as u32, ty as u32)];
        let ratio_f = ratio as f32;
        // The background everywhere first: beyond the poles no tile is drawn.
        for layer in &style.layers {
            if layer.kind == Kind::Background && layer.shown_at(zoom) {
                let zctx = Ctx {
                    zoom,
                    feature: None,
                };
                let c = layer.color("background-color", &zctx, Color::BLACK);
                let o = layer.number("background-opacity", &zctx, 1.0) as f32;
                let rect = Rect::from_xywh(0.0, 0.0, width as f32, height as f32)
                    .ok_or_else(|| RenderError::Failed("image rect".into()))?;
                pm.fill_rect(rect, &solid(c, o), Transform::identity(), None);
            }
        }
        // Each drawn tile is painted into a pixmap of its own square, snapped to whole pixels,
        // and copied into the image at that integer offset: no resampling, every pixel painted
        // by one tile only, and memory bounded by one tile whatever the image size.
        for &(tx, ty) in &drawn {
            let (x0, y0) = view.px(tx as f64, ty as f64);
            let (x1, y1) = view.px((tx + 1) as f64, (ty + 1) as f64);
            let (x0, y0) = (x0.round().max(0.0), y0.round().max(0.0));
            let (x1, y1) = (x1.round().min(w), y1.round().min(h));
            if x1 <= x0 || y1 <= y0 {
                continue;
            }
            let Some(mut part) = Pixmap::new((x1 - x0) as u32, (y1 - y0) as u32) else {
                continue;
            };
            let local = View {
                ox: view.ox + x0,
                oy: view.oy + y0,
                w: x1 - x0,
                h: y1 - y0,
                ..view
            };
            let tile = tile_of(tx, ty);
            for layer in &style.layers {
                if !layer.shown_at(zoom) {
                    continue;
                }
                draw_geometry(&mut part, layer, tile, zoom, &local, tx, ty, ratio_f);
            }
            let copy = PixmapPaint {
                blend_mode: tiny_skia::BlendMode::Source,
                ..PixmapPaint::default()
            };
            pm.draw_pixmap(
                x0 as i32,
                y0 as i32,
                part.as_ref(),
                &copy,
                Transform::identity(),
                None,
            );
        }
        let mut candidates: Vec<Candidate> = vec![];
        for (li, layer) in style.layers.iter().enumerate() {
            if layer.kind != Kind::Symbol || !layer.shown_at(zoom) {
                continue;
            }
            let Some(name) = layer.source_layer.as_deref() else {
                continue;
            };
            for &(tx, ty) in &labelled {
                let Some(src) = tile_of(tx, ty).layer(name) else {
                    continue;
                };
                self.candidates(
                    &mut candidates,
                    li,
                    layer,
                    sprite,
                    zoom,
                    src,
                    tx,
                    ty,
                    &view,
                    ratio_f,
                );
            }
        }
        place_labels(&mut pm, candidates, ratio_f);
        Ok(pm)
    }

    /// The font of the first fontstack (by name), for text drawn outside styles.
    pub fn first_font(&self) -> Option<&Font> {
        let mut names: Vec<&String> = self.fonts.keys().collect();
        names.sort();
        names.first().and_then(|n| self.fonts.get(*n))
    }

    /// The source tile and those of its 8 neighbours that come within a label's reach of the
    /// output tile, with their unwrapped column and row.
    fn neighbourhood(
        &self,
        sz: u8,
        sx: u32,
        sy: u32,
        view: &View,
        tile: &Tile,
    ) -> Vec<(i64, i64, Tile)> {
        let n = 1i64 << sz;
        let margin = view.margin;
        let mut out = vec![(i64::from(sx), i64::from(sy), tile.clone())];
        for dy in -1i64..=1 {
            for dx in -1i64..=1 {
                let (tx, ty) = (i64::from(sx) + dx, i64::from(sy) + dy);
                if (dx == 0 && dy == 0) || ty < 0 || ty >= n {
                    continue;
                }
                let (x0, y0) = view.px(tx as f64, ty as f64);
                let (x1, y1) = view.px((tx + 1) as f64, (ty + 1) as f64);
                if x1 < -margin || y1 < -margin || x0 > view.w + margin || y0 > view.h + margin {
                    continue;
                }
                let wrapped = tx.rem_euclid(n) as u32;
                if let Ok(Some(t)) = self.tileset.decoded(sz, wrapped, ty as u32) {
                    out.push((tx, ty, t));
                }
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn candidates<'a>(
        &'a self,
        out: &mut Vec<Candidate<'a>>,
        li: usize,
        layer: &'a StyleLayer,
        sprite: Option<&'a Sprite>,
        zoom: f64,
        src: &Layer,
        tx: i64,
        ty: i64,
        view: &View,
        ratio: f32,
    ) {
        let extent = src.extent as f32;
        let margin = view.margin;
        for f in src.features.iter().filter(|f| f.kind == GeomType::Point) {
            let ctx = Ctx {
                zoom,
                feature: Some((src, f)),
            };
            if !layer.accepts(&ctx) {
                continue;
            }
            for part in &f.parts {
                let (px, py) = part[0];
                // A point in a tile's buffer belongs to its neighbour, which is asked too.
                if px < 0.0 || py < 0.0 || px >= extent || py >= extent {
                    continue;
                }
                let gx = tx as f64 + f64::from(px / extent);
                let gy = ty as f64 + f64::from(py / extent);
                let (ax, ay) = view.px(gx, gy);
                if ax < -margin || ay < -margin || ax > view.w + margin || ay > view.h + margin {
                    continue;
                }
                let mut text = layer.text(&ctx);
                match layer.string("text-transform", &ctx, "none").as_str() {
                    "uppercase" => text = text.to_uppercase(),
                    "lowercase" => text = text.to_lowercase(),
                    _ => {}
                }
                let icon = layer.layout.get("icon-image").and_then(|j| {
                    let name = super::style::eval(j, &ctx).text();
                    let sprite = sprite?;
                    let pm = sprite.images.get(&name)?;
                    let s =
                        layer.number("icon-size", &ctx, 1.0) as f32 * ratio / sprite.ratio as f32;
                    let (w, h) = (pm.width() as f32 * s, pm.height() as f32 * s);
                    Some((pm, ax as f32 - w / 2.0, ay as f32 - h / 2.0, s))
                });
                if text.trim().is_empty() && icon.is_none() {
                    continue;
                }
                let font_name = match layer
                    .layout
                    .get("text-font")
                    .map(|j| super::style::eval(j, &ctx))
                {
                    Some(super::style::Val::Array(a)) => a.first().map(|v| v.text()),
                    _ => None,
                };
                let Some(font) = font_name
                    .and_then(|n| self.fonts.get(&n))
                    .or_else(|| self.fonts.values().next())
                else {
                    return;
                };
                let text_size = layer.number("text-size", &ctx, 16.0) as f32;
                let max_width = layer.number("text-max-width", &ctx, 10.0) as f32;
                let shaped = if text.trim().is_empty() {
                    Shaped::default()
                } else {
                    glyphs::shape(font, &text, max_width)
                };
                let scale = text_size / SDF_SIZE * ratio;
                let (w, h) = (shaped.width * scale, shaped.height * scale);
                let offset = layer.numbers("text-offset", &ctx).unwrap_or_default();
                let em = text_size * ratio;
                let ox = offset.first().copied().unwrap_or(0.0) as f32 * em;
                let oy = offset.get(1).copied().unwrap_or(0.0) as f32 * em;
                let (ax, ay) = (ax as f32 + ox, ay as f32 + oy);
                let anchor = layer.string("text-anchor", &ctx, "center");
                let (x, y) = match anchor.as_str() {
                    "top" => (ax - w / 2.0, ay),
                    "bottom" => (ax - w / 2.0, ay - h),
                    "left" => (ax, ay - h / 2.0),
                    "right" => (ax - w, ay - h / 2.0),
                    "top-left" => (ax, ay),
                    "top-right" => (ax - w, ay),
                    "bottom-left" => (ax, ay - h),
                    "bottom-right" => (ax - w, ay - h),
                    _ => (ax - w / 2.0, ay - h / 2.0),
                };
                let paint = TextPaint {
                    color: layer.color("text-color", &ctx, Color::BLACK),
                    halo_color: layer.color("text-halo-color", &ctx, Color::TRANSPARENT),
                    halo_width: layer.number("text-halo-width", &ctx, 0.0) as f32 * ratio,
                    scale,
                    ratio,
                };
                let key = layer.number("symbol-sort-key", &ctx, 0.0);
                let order = (usize::MAX - li, key, gy, gx);
                out.push(Candidate {
                    order,
                    layer,
                    shaped,
                    font,
                    x,
                    y,
                    w,
                    h,
                    paint,
                    icon,
                });
            }
        }
    }
}

/// Web Mercator position of a point as fractions of the world (0 to 1, west to east and north
/// to south); latitudes are clamped to the projection's ±85.0511°.
pub fn mercator(lon: f64, lat: f64) -> (f64, f64) {
    let lat = lat.clamp(-85.051_128_78, 85.051_128_78);
    let s = lat.to_radians().sin();
    (
        (lon + 180.0) / 360.0,
        0.5 - ((1.0 + s) / (1.0 - s)).ln() / (4.0 * std::f64::consts::PI),
    )
}

/// Where the output image lies: source-tile units are multiplied by `scale` (output pixels per
/// source tile) and shifted by the image's top-left corner `(ox, oy)`; the image is `w` x `h`
/// pixels, and labels anchored up to `margin` pixels outside it are still placed.
struct View {
    scale: f64,
    ox: f64,
    oy: f64,
    w: f64,
    h: f64,
    margin: f64,
}

impl View {
    /// Pixel position of a point given in source-tile units (column + fraction, row + fraction).
    fn px(&self, gx: f64, gy: f64) -> (f64, f64) {
        (gx * self.scale - self.ox, gy * self.scale - self.oy)
    }
}

fn solid(c: Color, opacity: f32) -> Paint<'static> {
    let mut p = Paint::default();
    p.set_color(c.to_skia(opacity));
    p.anti_alias = true;
    p
}

/// Draws a background, fill, line or circle layer of one source tile (`tx`, `ty`) into `pm`,
/// which shows `view`: what a raster tile and a static map's view share. Symbols are placed
/// separately, over the whole image.
#[allow(clippy::too_many_arguments)]
fn draw_geometry(
    pm: &mut Pixmap,
    layer: &StyleLayer,
    tile: &Tile,
    zoom: f64,
    view: &View,
    tx: i64,
    ty: i64,
    ratio: f32,
) {
    match layer.kind {
        Kind::Background => {
            let ctx = Ctx {
                zoom,
                feature: None,
            };
            let c = layer.color("background-color", &ctx, Color::BLACK);
            let o = layer.number("background-opacity", &ctx, 1.0) as f32;
            if let Some(rect) = Rect::from_xywh(0.0, 0.0, pm.width() as f32, pm.height() as f32) {
                pm.fill_rect(rect, &solid(c, o), Transform::identity(), None);
            }
        }
        Kind::Fill | Kind::Line | Kind::Circle => {
            let Some(src) = layer.source_layer.as_deref().and_then(|n| tile.layer(n)) else {
                return;
            };
            for f in &src.features {
                let ctx = Ctx {
                    zoom,
                    feature: Some((src, f)),
                };
                if layer.accepts(&ctx) {
                    draw_feature(pm, layer, &ctx, src, f, view, tx, ty, ratio);
                }
            }
        }
        Kind::Symbol | Kind::Other => {}
    }
}

#[allow(clippy::too_many_arguments)]
fn draw_feature(
    pm: &mut Pixmap,
    layer: &StyleLayer,
    ctx: &Ctx,
    src: &Layer,
    f: &Feature,
    view: &View,
    tx: i64,
    ty: i64,
    ratio: f32,
) {
    let extent = f64::from(src.extent);
    let to_px = |(px, py): (f32, f32)| {
        let (x, y) = view.px(
            tx as f64 + f64::from(px) / extent,
            ty as f64 + f64::from(py) / extent,
        );
        (x as f32, y as f32)
    };
    let path_of = |close: bool| {
        let mut pb = PathBuilder::new();
        for part in &f.parts {
            let mut pts = part.iter().copied().map(to_px);
            let Some((x0, y0)) = pts.next() else { continue };
            pb.move_to(x0, y0);
            for (x, y) in pts {
                pb.line_to(x, y);
            }
            if close {
                pb.close();
            }
        }
        pb.finish()
    };
    match layer.kind {
        Kind::Fill if f.kind == GeomType::Polygon => {
            let Some(path) = path_of(true) else { return };
            let c = layer.color("fill-color", ctx, Color::BLACK);
            let o = layer.number("fill-opacity", ctx, 1.0) as f32;
            pm.fill_path(
                &path,
                &solid(c, o),
                FillRule::EvenOdd,
                Transform::identity(),
                None,
            );
        }
        Kind::Line if matches!(f.kind, GeomType::LineString | GeomType::Polygon) => {
            let Some(path) = path_of(f.kind == GeomType::Polygon) else {
                return;
            };
            let c = layer.color("line-color", ctx, Color::BLACK);
            let o = layer.number("line-opacity", ctx, 1.0) as f32;
            let width = layer.number("line-width", ctx, 1.0) as f32 * ratio;
            if width <= 0.0 || o <= 0.0 {
                return;
            }
            let mut stroke = Stroke {
                width,
                line_cap: match layer.string("line-cap", ctx, "butt").as_str() {
                    "round" => LineCap::Round,
                    "square" => LineCap::Square,
                    _ => LineCap::Butt,
                },
                line_join: match layer.string("line-join", ctx, "miter").as_str() {
                    "round" => LineJoin::Round,
                    "bevel" => LineJoin::Bevel,
                    _ => LineJoin::Miter,
                },
                ..Stroke::default()
            };
            if let Some(dash) = layer.numbers("line-dasharray", ctx) {
                let mut d: Vec<f32> = dash.iter().map(|v| (*v as f32 * width).max(0.5)).collect();
                if d.len() % 2 == 1 {
                    d.extend(d.clone());
                }
                stroke.dash = StrokeDash::new(d, 0.0);
            }
            pm.stroke_path(&path, &solid(c, o), &stroke, Transform::identity(), None);
        }
        Kind::Circle if f.kind == GeomType::Point => {
            let r = layer.number("circle-radius", ctx, 5.0) as f32 * ratio;
            let c = layer.color("circle-color", ctx, Color::BLACK);
            let o = layer.number("circle-opacity", ctx, 1.0) as f32;
            let sw = layer.number("circle-stroke-width", ctx, 0.0) as f32 * ratio;
            let sc = layer.color("circle-stroke-color", ctx, Color::BLACK);
            for part in &f.parts {
                let (x, y) = to_px(part[0]);
                let Some(circle) = PathBuilder::from_circle(x, y, r.max(0.1)) else {
                    continue;
                };
                pm.fill_path(
                    &circle,
                    &solid(c, o),
                    FillRule::Winding,
                    Transform::identity(),
                    None,
                );
                if sw > 0.0 {
                    let stroke = Stroke {
                        width: sw,
                        ..Stroke::default()
                    };
                    pm.stroke_path(&circle, &solid(sc, o), &stroke, Transform::identity(), None);
                }
            }
        }
        _ => {}
    }
}

/// Places labels in their global order, skipping any that would overlap one already placed,
/// and draws those that touch the tile.
fn place_labels(pm: &mut Pixmap, mut candidates: Vec<Candidate>, ratio: f32) {
    candidates.sort_by(|a, b| {
        a.order
            .partial_cmp(&b.order)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let pad = 2.0 * ratio;
    let (width, height) = (pm.width() as f32, pm.height() as f32);
    let mut placed: Vec<(f32, f32, f32, f32)> = vec![];
    for c in candidates {
        let (x0, y0, x1, y1) = c.bounds();
        let b = (x0 - pad, y0 - pad, x1 + pad, y1 + pad);
        let overlaps = placed
            .iter()
            .any(|p| b.0 < p.2 && p.0 < b.2 && b.1 < p.3 && p.1 < b.3);
        let allow = c
            .layer
            .layout
            .get("text-allow-overlap")
            .and_then(serde_json::Value::as_bool)
            == Some(true);
        if overlaps && !allow {
            continue;
        }
        placed.push(b);
        if b.2 < 0.0 || b.3 < 0.0 || b.0 > width || b.1 > height {
            continue;
        }
        if let Some((icon, x, y, s)) = c.icon {
            let t = Transform::from_row(s, 0.0, 0.0, s, x, y);
            let paint = PixmapPaint {
                quality: tiny_skia::FilterQuality::Bilinear,
                ..PixmapPaint::default()
            };
            pm.draw_pixmap(0, 0, icon.as_ref(), &paint, t, None);
        }
        glyphs::draw(pm, c.font, &c.shaped, c.x, c.y, &c.paint);
    }
}

/// Encodes a pixmap as an 8-bit RGB PNG (RGBA when any pixel is not opaque).
pub fn encode_png(pm: &Pixmap) -> Result<Vec<u8>, RenderError> {
    let opaque = pm.pixels().iter().all(|p| p.alpha() == 255);
    let mut data = Vec::with_capacity(pm.pixels().len() * if opaque { 3 } else { 4 });
    for p in pm.pixels() {
        let c = p.demultiply();
        data.extend_from_slice(&[c.red(), c.green(), c.blue()]);
        if !opaque {
            data.push(c.alpha());
        }
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, pm.width(), pm.height());
    enc.set_color(if opaque {
        png::ColorType::Rgb
    } else {
        png::ColorType::Rgba
    });
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Default);
    enc.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    let fail = |e: png::EncodingError| RenderError::Failed(format!("PNG encoding: {e}"));
    let mut w = enc.write_header().map_err(fail)?;
    w.write_image_data(&data).map_err(fail)?;
    w.finish().map_err(fail)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const STYLE: &str = r##"{"version":8,"sources":{},"layers":[
      {"id":"bg","type":"background","paint":{"background-color":"#f0e8d8"}},
      {"id":"water","type":"fill","source":"b","source-layer":"water","paint":{"fill-color":"#0000ff"}},
      {"id":"border","type":"line","source":"b","source-layer":"boundary","paint":{"line-color":"#ff0000","line-width":2}},
      {"id":"places","type":"symbol","source":"b","source-layer":"place",
       "filter":["==",["get","class"],"country"],
       "layout":{"text-field":["get","name"],"text-font":["Noto Sans Regular"],"text-size":14},
       "paint":{"text-color":"#000000","text-halo-color":"#ffffff","text-halo-width":1}}
    ]}"##;

    fn renderer() -> Renderer {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/basemap.mbtiles");
        Renderer::new(Arc::new(Tileset::open(&path).unwrap())).unwrap()
    }

    /// The pixel at a lon/lat in tile z/x/y of `size` pixels.
    fn pixel_at(pm: &Pixmap, z: u8, x: u32, y: u32, lon: f64, lat: f64) -> (u8, u8, u8) {
        let n = f64::from(1u32 << z);
        let fx = (lon + 180.0) / 360.0 * n - f64::from(x);
        let s = lat.to_radians().sin();
        let fy =
            (0.5 - ((1.0 + s) / (1.0 - s)).ln() / (4.0 * std::f64::consts::PI)) * n - f64::from(y);
        let size = f64::from(pm.width());
        let p = pm
            .pixel((fx * size) as u32, (fy * size) as u32)
            .unwrap()
            .demultiply();
        (p.red(), p.green(), p.blue())
    }

    #[test]
    fn sea_is_blue_and_land_is_land_coloured() {
        let r = renderer();
        let style = Style::parse(STYLE).unwrap();
        let pm = r.render(&style, None, 3, 4, 2, 1).unwrap();
        // North Sea and the middle of Germany.
        assert_eq!(pixel_at(&pm, 3, 4, 2, 3.0, 56.0), (0, 0, 255));
        assert_eq!(pixel_at(&pm, 3, 4, 2, 10.0, 51.0), (0xf0, 0xe8, 0xd8));
        // Overzoomed past the tileset's z7, @2x: the sea off The Hague and inland Utrecht at z12.
        let pm = r.render(&style, None, 12, 2095, 1351, 2).unwrap();
        assert_eq!(pm.width(), 512);
        assert_eq!(pixel_at(&pm, 12, 2095, 1351, 4.15, 52.09), (0, 0, 255));
        let pm = r.render(&style, None, 12, 2106, 1351, 2).unwrap();
        assert_eq!(
            pixel_at(&pm, 12, 2106, 1351, 5.12, 52.09),
            (0xf0, 0xe8, 0xd8)
        );
    }

    #[test]
    fn draws_borders_and_labels() {
        let r = renderer();
        let style = Style::parse(STYLE).unwrap();
        let pm = r.render(&style, None, 4, 8, 5, 1).unwrap();
        let px = pm.pixels();
        let red = px
            .iter()
            .filter(|p| p.red() > 200 && p.green() < 80 && p.blue() < 80)
            .count();
        assert!(red > 100, "{red} border pixels");
        let black = px
            .iter()
            .filter(|p| p.red() < 60 && p.green() < 60 && p.blue() < 60)
            .count();
        assert!(black > 50, "{black} label pixels");
    }

    #[test]
    fn draws_icons_from_the_sprite() {
        let r = renderer();
        let icons: Vec<(&str, &str)> = r.tileset().icons().filter(|(n, _)| *n == "star").collect();
        assert_eq!(icons.len(), 1, "the basemap embeds Maki's star");
        let (sprite, failed) = Sprite::rasterize(
            icons,
            2,
            Color {
                r: 0.0,
                g: 1.0,
                b: 0.0,
                a: 1.0,
            },
        );
        assert!(failed.is_empty());
        let style = Style::parse(
            r##"{"version":8,"sources":{},"layers":[
              {"id":"bg","type":"background","paint":{"background-color":"#ffffff"}},
              {"id":"capitals","type":"symbol","source":"b","source-layer":"place",
               "filter":["has","capital"],"layout":{"icon-image":"star"}}]}"##,
        )
        .unwrap();
        let green = |pm: &Pixmap| {
            pm.pixels()
                .iter()
                .filter(|p| p.green() > 200 && p.red() < 60)
                .count()
        };
        assert!(green(&r.render(&style, Some(&sprite), 4, 8, 5, 2).unwrap()) > 100);
        assert!(
            green(&r.render(&style, Some(&sprite), 4, 8, 5, 1).unwrap()) > 25,
            "scaled to another ratio"
        );
        assert_eq!(green(&r.render(&style, None, 4, 8, 5, 1).unwrap()), 0);
    }

    #[test]
    fn out_of_range_tiles_are_not_found() {
        let r = renderer();
        let style = Style::parse(STYLE).unwrap();
        assert_eq!(
            r.render(&style, None, 2, 4, 0, 1).err(),
            Some(RenderError::NotFound)
        );
        assert_eq!(
            r.render(&style, None, 23, 0, 0, 1).err(),
            Some(RenderError::NotFound)
        );
        assert_eq!(
            r.render(&style, None, 1, 0, 0, 5).err(),
            Some(RenderError::NotFound)
        );
    }

    #[test]
    fn encodes_png() {
        let r = renderer();
        let style = Style::parse(STYLE).unwrap();
        let png = r.render_png(&style, None, 0, 0, 0, 1).unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }
}
