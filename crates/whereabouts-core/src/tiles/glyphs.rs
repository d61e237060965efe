//! Glyph ranges in the SDF protocol-buffer format MapLibre reads (`{fontstack}/{range}.pbf`), and
//! text drawn from them: the raster renderer uses the same glyphs the browser does, so labels
//! look alike. Each glyph is a signed-distance bitmap of a 24 px font with a 3 px border.

use std::collections::HashMap;

use tiny_skia::{Pixmap, PremultipliedColorU8};

use super::pbf::{PbfError, Reader};
use super::style::Color;

/// The font size, in pixels, the SDF bitmaps were made for.
pub const SDF_SIZE: f32 = 24.0;
/// The border around each bitmap, in pixels.
const BORDER: i32 = 3;

/// One glyph's metrics and distance field.
#[derive(Debug, Clone)]
pub struct Glyph {
    pub width: u32,
    pub height: u32,
    pub left: i32,
    pub top: i32,
    pub advance: u32,
    /// `(width + 6) x (height + 6)` distance values, 192 on the outline.
    pub bitmap: Vec<u8>,
}

/// The glyphs of one fontstack by code point.
#[derive(Debug, Clone, Default)]
pub struct Font {
    pub glyphs: HashMap<u32, Glyph>,
}

impl Font {
    /// Adds the glyphs of one range file.
    pub fn add_range(&mut self, buf: &[u8]) -> Result<(), PbfError> {
        let mut r = Reader::new(buf);
        while let Some((n, stack)) = r.next_field()? {
            if n != 1 {
                continue;
            }
            let mut s = Reader::new(stack.bytes());
            while let Some((n, g)) = s.next_field()? {
                if n == 3 {
                    let (id, glyph) = parse_glyph(g.bytes())?;
                    self.glyphs.insert(id, glyph);
                }
            }
        }
        Ok(())
    }
}

fn parse_glyph(buf: &[u8]) -> Result<(u32, Glyph), PbfError> {
    let mut g = Glyph {
        width: 0,
        height: 0,
        left: 0,
        top: 0,
        advance: 0,
        bitmap: vec![],
    };
    let mut id = 0;
    let mut r = Reader::new(buf);
    while let Some((n, f)) = r.next_field()? {
        match n {
            1 => id = f.uint() as u32,
            2 => g.bitmap = f.bytes().to_vec(),
            3 => g.width = f.uint() as u32,
            4 => g.height = f.uint() as u32,
            5 => g.left = f.sint() as i32,
            6 => g.top = f.sint() as i32,
            7 => g.advance = f.uint() as u32,
            _ => {}
        }
    }
    let expected = if g.width == 0 || g.height == 0 {
        0
    } else {
        ((g.width + 6) * (g.height + 6)) as usize
    };
    if g.bitmap.len() != expected {
        // A glyph without a usable bitmap still advances the pen.
        g.bitmap.clear();
        g.width = 0;
        g.height = 0;
    }
    Ok((id, g))
}

/// A glyph placed on a line of text, in SDF pixels from the text's top-left corner.
#[derive(Debug, Clone, Copy)]
pub struct Placed {
    pub code: u32,
    pub x: f32,
    pub y: f32,
}

/// Text laid out in SDF pixels (24 px font): glyph positions and the box they fill.
#[derive(Debug, Clone, Default)]
pub struct Shaped {
    pub glyphs: Vec<Placed>,
    pub width: f32,
    pub height: f32,
}

/// The line height, in SDF pixels.
const LINE_HEIGHT: f32 = 1.2 * SDF_SIZE;
/// Where a glyph's `top` is measured from, in SDF pixels below a line's top: fontnik measures
/// it down from the font's ascender line (26 px above the baseline for Noto Sans at 24 px);
/// with that line 3 px above the line box, capitals sit centred in the box.
const ASCENDER_LINE: f32 = -3.0;

/// Lays `text` out left to right, breaking at spaces so that lines stay under `max_width` ems
/// where a word allows, each line centred. No complex shaping: scripts that need it are drawn
/// glyph by glyph.
pub fn shape(font: &Font, text: &str, max_width_em: f32) -> Shaped {
    let advance = |c: char| {
        font.glyphs
            .get(&(c as u32))
            .map_or(SDF_SIZE * 0.5, |g| g.advance as f32)
    };
    let max = max_width_em * SDF_SIZE;
    let mut lines: Vec<(String, f32)> = vec![];
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let w: f32 = word.chars().map(advance).sum();
        if let Some((line, lw)) = lines.last_mut() {
            let space = advance(' ');
            if *lw + space + w <= max {
                line.push(' ');
                line.push_str(word);
                *lw += space + w;
                continue;
            }
        }
        lines.push((word.to_string(), w));
    }
    let width = lines.iter().map(|l| l.1).fold(0.0, f32::max);
    let mut out = Shaped {
        glyphs: vec![],
        width,
        height: lines.len() as f32 * LINE_HEIGHT,
    };
    for (i, (line, lw)) in lines.iter().enumerate() {
        let mut x = (width - lw) / 2.0;
        let y = i as f32 * LINE_HEIGHT;
        for c in line.chars() {
            out.glyphs.push(Placed {
                code: c as u32,
                x,
                y,
            });
            x += advance(c);
        }
    }
    out
}

/// How to draw a shaped text.
#[derive(Debug, Clone, Copy)]
pub struct TextPaint {
    pub color: Color,
    pub halo_color: Color,
    /// Halo width in output pixels (0 for none).
    pub halo_width: f32,
    /// Output pixels per SDF pixel (text size / 24 x pixel ratio).
    pub scale: f32,
    /// Output pixels per CSS pixel (1, or 2 for @2x tiles).
    pub ratio: f32,
}

/// Draws `shaped` with its top-left corner at `(ox, oy)` in output pixels: the halo of every
/// glyph first, then the fill, as MapLibre's SDF shader does.
pub fn draw(
    pixmap: &mut Pixmap,
    font: &Font,
    shaped: &Shaped,
    ox: f32,
    oy: f32,
    paint: &TextPaint,
) {
    // The distance field falls by 8/256 per SDF pixel; 0.75 is the outline.
    let font_scale = paint.scale / paint.ratio;
    let gamma = 0.105 / paint.ratio / font_scale;
    if paint.halo_width > 0.0 && paint.halo_color.a > 0.0 {
        let halo_css = paint.halo_width / paint.ratio;
        let buff = ((6.0 - halo_css / font_scale) / 8.0).max(0.0);
        for p in &shaped.glyphs {
            draw_glyph(
                pixmap,
                font,
                p,
                ox,
                oy,
                paint.scale,
                buff,
                gamma,
                paint.halo_color,
            );
        }
    }
    for p in &shaped.glyphs {
        draw_glyph(
            pixmap,
            font,
            p,
            ox,
            oy,
            paint.scale,
            0.75,
            gamma,
            paint.color,
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn draw_glyph(
    pixmap: &mut Pixmap,
    font: &Font,
    p: &Placed,
    ox: f32,
    oy: f32,
    scale: f32,
    buff: f32,
    gamma: f32,
    color: Color,
) {
    let Some(g) = font.glyphs.get(&p.code) else {
        return;
    };
    if g.bitmap.is_empty() {
        return;
    }
    let bw = (g.width as i32 + 2 * BORDER) as f32;
    let bh = (g.height as i32 + 2 * BORDER) as f32;
    // The bitmap's top-left corner in SDF pixels from the text's top-left.
    let gx = p.x + (g.left - BORDER) as f32;
    let gy = p.y + ASCENDER_LINE - (g.top + BORDER) as f32;
    let x0 = ox + gx * scale;
    let y0 = oy + gy * scale;
    let (pw, ph) = (pixmap.width() as i32, pixmap.height() as i32);
    let px0 = (x0.floor() as i32).max(0);
    let py0 = (y0.floor() as i32).max(0);
    let px1 = ((x0 + bw * scale).ceil() as i32).min(pw);
    let py1 = ((y0 + bh * scale).ceil() as i32).min(ph);
    if px0 >= px1 || py0 >= py1 {
        return;
    }
    let stride = (g.width as i32 + 2 * BORDER) as usize;
    let sample = |u: f32, v: f32| -> f32 {
        // Bilinear, clamped to the bitmap.
        let u = u.clamp(0.0, bw - 1.0);
        let v = v.clamp(0.0, bh - 1.0);
        let (iu, iv) = (u.floor() as usize, v.floor() as usize);
        let (fu, fv) = (u - iu as f32, v - iv as f32);
        let iu1 = (iu + 1).min(stride - 1);
        let iv1 = (iv + 1).min(bh as usize - 1);
        let at = |x: usize, y: usize| f32::from(g.bitmap[y * stride + x]);
        let top = at(iu, iv) * (1.0 - fu) + at(iu1, iv) * fu;
        let bottom = at(iu, iv1) * (1.0 - fu) + at(iu1, iv1) * fu;
        (top * (1.0 - fv) + bottom * fv) / 255.0
    };
    let pixels = pixmap.pixels_mut();
    for py in py0..py1 {
        for px in px0..px1 {
            let u = (px as f32 + 0.5 - x0) / scale - 0.5;
            let v = (py as f32 + 0.5 - y0) / scale - 0.5;
            let d = sample(u, v);
            let a = smoothstep(buff - gamma, buff + gamma, d) * color.a;
            if a <= 0.0 {
                continue;
            }
            let i = (py * pw + px) as usize;
            pixels[i] = blend(pixels[i], color, a);
        }
    }
}

fn smoothstep(e0: f32, e1: f32, x: f32) -> f32 {
    let t = ((x - e0) / (e1 - e0)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// Source-over of `color` at coverage `a` onto a premultiplied pixel.
fn blend(dst: PremultipliedColorU8, color: Color, a: f32) -> PremultipliedColorU8 {
    let inv = 1.0 - a;
    let ch = |s: f32, d: u8| {
        ((s * a * 255.0) + f32::from(d) * inv)
            .round()
            .clamp(0.0, 255.0) as u8
    };
    let alpha = ((a * 255.0) + f32::from(dst.alpha()) * inv)
        .round()
        .clamp(0.0, 255.0) as u8;
    let r = ch(color.r, dst.red()).min(alpha);
    let g = ch(color.g, dst.green()).min(alpha);
    let b = ch(color.b, dst.blue()).min(alpha);
    PremultipliedColorU8::from_rgba(r, g, b, alpha).expect("channels within alpha")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn font() -> Font {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/basemap.mbtiles");
        let set = super::super::tileset::Tileset::open(&path).unwrap();
        let mut f = Font::default();
        f.add_range(set.glyph_range("Noto Sans Regular", "0-255").unwrap())
            .unwrap();
        f
    }

    #[test]
    fn reads_glyph_ranges() {
        let f = font();
        let a = &f.glyphs[&('A' as u32)];
        assert!(a.width > 5 && a.height > 10 && a.advance > 5, "{a:?}");
        assert_eq!(a.bitmap.len() as u32, (a.width + 6) * (a.height + 6));
    }

    #[test]
    fn capitals_sit_centred_in_their_line_box() {
        let f = font();
        let s = shape(&f, "HEM", 10.0);
        let mut pm = Pixmap::new(100, 60).unwrap();
        pm.fill(tiny_skia::Color::WHITE);
        let black = Color {
            r: 0.0,
            g: 0.0,
            b: 0.0,
            a: 1.0,
        };
        let paint = TextPaint {
            color: black,
            halo_color: black,
            halo_width: 0.0,
            scale: 1.0,
            ratio: 1.0,
        };
        draw(&mut pm, &f, &s, 0.0, 10.0, &paint);
        let rows: Vec<u32> = (0..60)
            .filter(|&y| (0..100).any(|x| pm.pixel(x, y).unwrap().red() < 128))
            .collect();
        let ink_centre = (rows[0] + rows[rows.len() - 1]) as f32 / 2.0;
        let box_centre = 10.0 + s.height / 2.0;
        assert!(
            (ink_centre - box_centre).abs() <= 2.0,
            "ink {ink_centre} box {box_centre}"
        );
    }

    #[test]
    fn shapes_and_draws_dark_text_on_white() {
        let f = font();
        let s = shape(&f, "Den Haag", 10.0);
        assert_eq!(s.glyphs.len(), 8);
        assert!(s.width > 60.0 && s.height == LINE_HEIGHT);
        let wrapped = shape(&f, "Den Haag", 2.0);
        assert_eq!(wrapped.height, 2.0 * LINE_HEIGHT);
        let mut pm = Pixmap::new(200, 40).unwrap();
        pm.fill(tiny_skia::Color::WHITE);
        let black = Color {
            r: 0.0,
            g: 0.0,
            b: 0.0,
            a: 1.0,
        };
        let paint = TextPaint {
            color: black,
            halo_color: black,
            halo_width: 0.0,
            scale: 0.5,
            ratio: 1.0,
        };
        draw(&mut pm, &f, &s, 2.0, 2.0, &paint);
        let dark = pm.pixels().iter().filter(|p| p.red() < 100).count();
        assert!(dark > 50, "{dark} dark pixels");
    }
}
