//! Static map images: the basemap drawn at an arbitrary centre, zoom and size
//! ([`Renderer::render_view`]), then paths, markers (vector pins) and a line of attribution,
//! encoded as PNG or JPEG. Parsing of the request (spec 4.8) happens in the caller; this module
//! takes the parsed parameters as JSON-friendly structs.
//!
//! Paths are straight lines in Web Mercator (not geodesics). A path that crosses the
//! antimeridian is drawn the short way: each point's longitude is unwrapped against the previous
//! one, and the whole path is drawn at every world copy that the image shows.

use serde::Deserialize;
use tiny_skia::{
    FillRule, LineCap, LineJoin, Paint, Path, PathBuilder, Pixmap, Rect, Stroke, Transform,
};

use super::glyphs::{self, TextPaint, SDF_SIZE};
use super::render::{encode_png, mercator, RenderError, Renderer};
use super::sprite::Sprite;
use super::style::{Color, Style};

/// The output encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    #[default]
    Png,
    Jpeg,
}

/// A path: straight segments between points, stroked, and filled (closed) with a fill colour.
#[derive(Debug, Clone, Deserialize)]
pub struct PathSpec {
    /// Stroke width in CSS pixels (0: no stroke).
    pub weight: f32,
    /// RGBA, 0-255 each.
    pub color: [u8; 4],
    pub fill: Option<[u8; 4]>,
    /// `[lat, lon]` pairs.
    pub points: Vec<[f64; 2]>,
}

/// Marker sizes, their pin height and head radius in CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MarkerSize {
    Tiny,
    Small,
    Large,
}

impl MarkerSize {
    fn dims(self) -> (f32, f32) {
        match self {
            MarkerSize::Tiny => (14.0, 5.0),
            MarkerSize::Small => (24.0, 8.0),
            MarkerSize::Large => (36.0, 11.5),
        }
    }
}

/// A pin whose tip is on `[lat, lon]`; `cutout` punches a dark dot into its head.
#[derive(Debug, Clone, Deserialize)]
pub struct MarkerSpec {
    pub size: MarkerSize,
    pub color: [u8; 4],
    pub cutout: bool,
    pub at: [f64; 2],
}

/// A static map request, parsed.
#[derive(Debug, Clone, Deserialize)]
pub struct StaticMap {
    pub lat: f64,
    pub lon: f64,
    pub zoom: f64,
    /// Size in CSS pixels; the image is `scale` times larger.
    pub width: u32,
    pub height: u32,
    pub scale: u32,
    #[serde(default)]
    pub format: ImageFormat,
    #[serde(default)]
    pub paths: Vec<PathSpec>,
    #[serde(default)]
    pub markers: Vec<MarkerSpec>,
    /// Drawn small in the bottom-right corner when it fits.
    #[serde(default)]
    pub attribution: String,
}

/// The grey of blank images (error answers).
const BLANK: [u8; 4] = [0xe5, 0xe3, 0xdf, 0xff];

fn rgba(c: [u8; 4]) -> Paint<'static> {
    let mut p = Paint::default();
    p.set_color_rgba8(c[0], c[1], c[2], c[3]);
    p.anti_alias = true;
    p
}

/// Draws `map` and encodes it.
pub fn render_static(
    renderer: &Renderer,
    style: &Style,
    sprite: Option<&Sprite>,
    map: &StaticMap,
) -> Result<Vec<u8>, RenderError> {
    let pm = draw_static(renderer, style, sprite, map)?;
    encode(&pm, map.format)
}

/// Draws `map` into a pixmap of `scale * width` x `scale * height` pixels.
pub fn draw_static(
    renderer: &Renderer,
    style: &Style,
    sprite: Option<&Sprite>,
    map: &StaticMap,
) -> Result<Pixmap, RenderError> {
    let (w, h) = (map.width * map.scale, map.height * map.scale);
    let mut pm =
        renderer.render_view(style, sprite, map.lon, map.lat, map.zoom, w, h, map.scale)?;
    let ratio = map.scale as f32;
    let world = 256.0 * f64::from(map.scale) * 2f64.powf(map.zoom);
    let (cx, cy) = mercator(map.lon, map.lat);
    // Pixel position of a point at longitude `lon` (unwrapped, may pass ±180).
    let to_px = |lat: f64, lon: f64| {
        let (fx, fy) = mercator(lon, lat);
        (
            ((fx - cx) * world + f64::from(w) / 2.0),
            ((fy - cy) * world + f64::from(h) / 2.0),
        )
    };
    for path in &map.paths {
        draw_path(&mut pm, path, &to_px, world, map.lon, ratio);
    }
    for m in &map.markers {
        let (x, y) = to_px(m.at[0], nearest_copy(m.at[1], map.lon));
        draw_marker(&mut pm, m, x as f32, y as f32, ratio);
    }
    draw_attribution(&mut pm, renderer, &map.attribution, ratio);
    Ok(pm)
}

/// `lon` moved by whole turns to within 180° of `center`.
fn nearest_copy(lon: f64, center: f64) -> f64 {
    lon + ((center - lon) / 360.0).round() * 360.0
}

fn draw_path(
    pm: &mut Pixmap,
    path: &PathSpec,
    to_px: &dyn Fn(f64, f64) -> (f64, f64),
    world: f64,
    center_lon: f64,
    ratio: f32,
) {
    let Some(first) = path.points.first() else {
        return;
    };
    // Unwrap: each longitude within 180° of the previous one, the first near the centre.
    let mut lon = nearest_copy(first[1], center_lon);
    let mut pts = Vec::with_capacity(path.points.len());
    for (i, p) in path.points.iter().enumerate() {
        if i > 0 {
            lon = nearest_copy(p[1], lon);
        }
        pts.push(to_px(p[0], lon));
    }
    let (minx, maxx) = pts
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let w = f64::from(pm.width());
    let pad = f64::from(path.weight * ratio);
    // Every copy of the world (east and west) that brings the path into view.
    let k0 = ((-maxx - pad) / world).floor() as i64;
    let k1 = ((w - minx + pad) / world).ceil() as i64;
    for k in k0..=k1 {
        let dx = k as f64 * world;
        if maxx + dx < -pad || minx + dx > w + pad {
            continue;
        }
        let mut pb = PathBuilder::new();
        for (i, &(x, y)) in pts.iter().enumerate() {
            // Far outside the image tiny-skia loses precision; the segments still point right.
            let (x, y) = ((x + dx).clamp(-1e6, 1e6) as f32, y.clamp(-1e6, 1e6) as f32);
            if i == 0 {
                pb.move_to(x, y);
            } else {
                pb.line_to(x, y);
            }
        }
        if path.fill.is_some() {
            pb.close();
        }
        let Some(p) = pb.finish() else { continue };
        if let Some(fill) = path.fill {
            pm.fill_path(
                &p,
                &rgba(fill),
                FillRule::EvenOdd,
                Transform::identity(),
                None,
            );
        }
        if path.weight > 0.0 && path.color[3] > 0 {
            let stroke = Stroke {
                width: path.weight * ratio,
                line_cap: LineCap::Round,
                line_join: LineJoin::Round,
                ..Stroke::default()
            };
            pm.stroke_path(&p, &rgba(path.color), &stroke, Transform::identity(), None);
        }
    }
}

/// The outline of a pin with its tip at `(x, y)`: a round head joined to the tip by the two
/// tangents from the tip.
fn pin(x: f32, y: f32, height: f32, r: f32) -> Option<Path> {
    let (cx, cy) = (x, y - height + r);
    let d = height - r;
    let beta = (r / d).acos();
    let mut pb = PathBuilder::new();
    pb.move_to(x, y);
    // From the right tangent point, over the top, to the left one (angles from straight down).
    let steps = 48;
    for i in 0..=steps {
        let a = beta + (std::f32::consts::TAU - 2.0 * beta) * i as f32 / steps as f32;
        pb.line_to(cx - r * a.sin(), cy + r * a.cos());
    }
    pb.close();
    pb.finish()
}

fn draw_marker(pm: &mut Pixmap, m: &MarkerSpec, x: f32, y: f32, ratio: f32) {
    let (height, r) = m.size.dims();
    let (height, r) = (height * ratio, r * ratio);
    let (w, h) = (pm.width() as f32, pm.height() as f32);
    if x + r < 0.0 || x - r > w || y < 0.0 || y - height > h {
        return;
    }
    let Some(outline) = pin(x, y, height, r) else {
        return;
    };
    pm.fill_path(
        &outline,
        &rgba(m.color),
        FillRule::Winding,
        Transform::identity(),
        None,
    );
    let dark = [
        (m.color[0] as f32 * 0.55) as u8,
        (m.color[1] as f32 * 0.55) as u8,
        (m.color[2] as f32 * 0.55) as u8,
        255,
    ];
    let stroke = Stroke {
        width: ratio.max(1.0),
        line_join: LineJoin::Round,
        ..Stroke::default()
    };
    pm.stroke_path(&outline, &rgba(dark), &stroke, Transform::identity(), None);
    if m.cutout {
        if let Some(dot) = PathBuilder::from_circle(x, y - height + r, r * 0.4) {
            pm.fill_path(
                &dot,
                &rgba(dark),
                FillRule::Winding,
                Transform::identity(),
                None,
            );
        }
    }
}

fn draw_attribution(pm: &mut Pixmap, renderer: &Renderer, text: &str, ratio: f32) {
    let Some(font) = renderer.first_font() else {
        return;
    };
    if text.trim().is_empty() {
        return;
    }
    let size = 10.0;
    let shaped = glyphs::shape(font, text, 1000.0);
    let scale = size / SDF_SIZE * ratio;
    let (tw, th) = (shaped.width * scale, shaped.height * scale);
    let pad = 3.0 * ratio;
    let (w, h) = (pm.width() as f32, pm.height() as f32);
    if tw + 2.0 * pad > w || th + 2.0 * pad > h / 4.0 {
        return;
    }
    let (x, y) = (w - tw - pad, h - th - pad / 2.0);
    if let Some(rect) = Rect::from_xywh(x - pad, y - pad / 2.0, tw + 2.0 * pad, th + pad) {
        pm.fill_rect(
            rect,
            &rgba([255, 255, 255, 180]),
            Transform::identity(),
            None,
        );
    }
    let paint = TextPaint {
        color: Color {
            r: 0.2,
            g: 0.2,
            b: 0.2,
            a: 1.0,
        },
        halo_color: Color::TRANSPARENT,
        halo_width: 0.0,
        scale,
        ratio,
    };
    glyphs::draw(pm, font, &shaped, x, y, &paint);
}

/// A blank grey image of `width` x `height` pixels (the answer to a static map error).
pub fn blank_image(width: u32, height: u32, format: ImageFormat) -> Result<Vec<u8>, RenderError> {
    let mut pm = Pixmap::new(width.max(1), height.max(1))
        .ok_or_else(|| RenderError::Failed("pixmap".into()))?;
    pm.fill(tiny_skia::Color::from_rgba8(
        BLANK[0], BLANK[1], BLANK[2], BLANK[3],
    ));
    encode(&pm, format)
}

/// Encodes a pixmap as PNG or as baseline JPEG (quality 85, on white where transparent).
pub fn encode(pm: &Pixmap, format: ImageFormat) -> Result<Vec<u8>, RenderError> {
    match format {
        ImageFormat::Png => encode_png(pm),
        ImageFormat::Jpeg => {
            let (w, h) = (pm.width(), pm.height());
            let (Ok(w16), Ok(h16)) = (u16::try_from(w), u16::try_from(h)) else {
                return Err(RenderError::Failed("image too large for JPEG".into()));
            };
            let mut rgb = Vec::with_capacity((w * h * 3) as usize);
            for p in pm.pixels() {
                // Premultiplied over white.
                let a = 255 - p.alpha();
                rgb.extend_from_slice(&[
                    p.red().saturating_add(a),
                    p.green().saturating_add(a),
                    p.blue().saturating_add(a),
                ]);
            }
            let mut out = Vec::new();
            let enc = jpeg_encoder::Encoder::new(&mut out, 85);
            enc.encode(&rgb, w16, h16, jpeg_encoder::ColorType::Rgb)
                .map_err(|e| RenderError::Failed(format!("JPEG encoding: {e}")))?;
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tiles::Tileset;
    use std::path::Path as FsPath;
    use std::sync::Arc;

    const STYLE: &str = r##"{"version":8,"sources":{},"layers":[
      {"id":"bg","type":"background","paint":{"background-color":"#ffffff"}},
      {"id":"water","type":"fill","source":"b","source-layer":"water",
       "paint":{"fill-color":"#0000ff","fill-opacity":0.5}}]}"##;

    fn renderer() -> Renderer {
        let path = FsPath::new(env!("CARGO_MANIFEST_DIR")).join("../../data/basemap.mbtiles");
        Renderer::new(Arc::new(Tileset::open(&path).unwrap())).unwrap()
    }

    fn map(lat: f64, lon: f64, zoom: f64, w: u32, h: u32, scale: u32) -> StaticMap {
        StaticMap {
            lat,
            lon,
            zoom,
            width: w,
            height: h,
            scale,
            format: ImageFormat::Png,
            paths: vec![],
            markers: vec![],
            attribution: String::new(),
        }
    }

    fn rgb(pm: &Pixmap, x: u32, y: u32) -> (u8, u8, u8) {
        let p = pm.pixel(x, y).unwrap().demultiply();
        (p.red(), p.green(), p.blue())
    }

    #[test]
    fn viewport_has_no_seams_between_source_tiles() {
        let r = renderer();
        let style = Style::parse(STYLE).unwrap();
        // Longitude -45 is a tile edge at z4 (and z2, z3): the middle column of the image.
        let pm = draw_static(&r, &style, None, &map(25.0, -45.0, 4.0, 200, 200, 1)).unwrap();
        let sea = rgb(&pm, 100, 100);
        assert!(sea.2 > 200 && sea.0 < 160, "half-opaque blue sea: {sea:?}");
        for x in 90..110 {
            for y in 80..120 {
                assert_eq!(rgb(&pm, x, y), sea, "pixel {x},{y}");
            }
        }
    }

    #[test]
    fn beyond_the_poles_is_background() {
        let r = renderer();
        let style = Style::parse(STYLE).unwrap();
        // At z1 the world is 512 px high; centred at 84°N the top 200 px are past 85.05°N.
        let pm = draw_static(&r, &style, None, &map(84.0, 0.0, 1.0, 100, 400, 1)).unwrap();
        assert_eq!(rgb(&pm, 50, 2), (255, 255, 255));
        assert_eq!(rgb(&pm, 50, 150), (255, 255, 255));
    }

    #[test]
    fn size_and_scale_give_the_pixel_size() {
        let r = renderer();
        let style = Style::parse(STYLE).unwrap();
        let pm = draw_static(&r, &style, None, &map(52.0, 5.0, 6.0, 300, 200, 2)).unwrap();
        assert_eq!((pm.width(), pm.height()), (600, 400));
        // Utrecht is land (white background), the North Sea off The Hague is sea.
        let at = |lat: f64, lon: f64| {
            let (fx, fy) = mercator(lon, lat);
            let (cx, cy) = mercator(5.0, 52.0);
            let world = 512.0 * 64.0;
            (
                ((fx - cx) * world + 300.0) as u32,
                ((fy - cy) * world + 200.0) as u32,
            )
        };
        let (x, y) = at(52.09, 5.12);
        assert_eq!(rgb(&pm, x, y), (255, 255, 255));
        let (x, y) = at(52.3, 3.5);
        assert!(rgb(&pm, x, y).2 > 200 && rgb(&pm, x, y).0 < 160);
    }

    #[test]
    fn markers_are_drawn_at_their_tip() {
        let r = renderer();
        let style = Style::parse(STYLE).unwrap();
        let mut m = map(48.0, 2.0, 5.0, 200, 200, 1);
        m.markers.push(MarkerSpec {
            size: MarkerSize::Large,
            color: [0, 200, 0, 255],
            cutout: true,
            at: [48.0, 2.0],
        });
        let pm = draw_static(&r, &style, None, &m).unwrap();
        // Above the tip, inside the head: green; below the tip: map.
        assert_eq!(rgb(&pm, 100, 100 - 30), (0, 200, 0));
        assert_ne!(rgb(&pm, 100, 110), (0, 200, 0));
        let green = pm.pixels().iter().filter(|p| p.green() == 200).count();
        m.scale = 2;
        let pm2 = draw_static(&r, &style, None, &m).unwrap();
        let green2 = pm2.pixels().iter().filter(|p| p.green() == 200).count();
        assert!(green2 > green * 3, "{green} at 1x, {green2} at 2x");
    }

    #[test]
    fn paths_cross_the_antimeridian_the_short_way() {
        let r = renderer();
        let style = Style::parse(STYLE).unwrap();
        let mut m = map(0.0, 180.0, 5.0, 400, 100, 1);
        m.paths.push(PathSpec {
            weight: 4.0,
            color: [255, 0, 0, 255],
            fill: None,
            points: vec![[0.0, 179.0], [0.0, -179.0]],
        });
        let pm = draw_static(&r, &style, None, &m).unwrap();
        let red = |x: u32| {
            let (r, g, b) = rgb(&pm, x, 50);
            r > 200 && g < 50 && b < 50
        };
        assert!(
            red(200) && red(185) && red(215),
            "2° of path is 45 px at z5"
        );
        assert!(!red(10) && !red(390));
    }

    #[test]
    fn filled_paths_close_the_polygon() {
        let r = renderer();
        let style = Style::parse(STYLE).unwrap();
        let mut m = map(0.0, 0.0, 3.0, 200, 200, 1);
        m.paths.push(PathSpec {
            weight: 0.0,
            color: [0, 0, 0, 0],
            fill: Some([255, 0, 0, 255]),
            points: vec![[10.0, -10.0], [10.0, 10.0], [-10.0, 10.0], [-10.0, -10.0]],
        });
        let pm = draw_static(&r, &style, None, &m).unwrap();
        assert_eq!(rgb(&pm, 100, 100), (255, 0, 0));
        assert_ne!(rgb(&pm, 5, 5), (255, 0, 0));
    }

    #[test]
    fn encodes_png_and_jpeg_and_blank_images() {
        let r = renderer();
        let style = Style::parse(STYLE).unwrap();
        let mut m = map(0.0, 0.0, 0.0, 64, 32, 1);
        m.format = ImageFormat::Jpeg;
        let jpg = render_static(&r, &style, None, &m).unwrap();
        assert_eq!(&jpg[..3], &[0xff, 0xd8, 0xff]);
        let png = blank_image(30, 20, ImageFormat::Png).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert_eq!(&png[16..24], &[0, 0, 0, 30, 0, 0, 0, 20]);
        assert_eq!(
            &blank_image(30, 20, ImageFormat::Jpeg).unwrap()[..2],
            &[0xff, 0xd8]
        );
    }
}
