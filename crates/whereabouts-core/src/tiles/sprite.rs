//! Sprites: the icons of a style (SVG, such as the Maki icons the basemap embeds) rasterized at
//! a pixel ratio in one colour, as MapLibre's sprite sheet (`sprite.json` + `sprite.png`) and as
//! images the raster renderer draws. Rasterized once per style and ratio, at start.

use std::collections::BTreeMap;

use tiny_skia::{Pixmap, PixmapPaint, Transform};

use super::render::{encode_png, RenderError};
use super::style::Color;

/// Icons rasterized at one pixel ratio.
pub struct Sprite {
    pub ratio: u32,
    /// Images by icon name, `ratio` pixels per CSS pixel.
    pub images: BTreeMap<String, Pixmap>,
}

impl Sprite {
    /// Rasterizes SVG icons (`(name, svg)`) at `ratio` in `color` (the fill every shape without
    /// its own inherits). An icon that does not parse is left out and named in the error list.
    pub fn rasterize<'a>(
        icons: impl IntoIterator<Item = (&'a str, &'a str)>,
        ratio: u32,
        color: Color,
    ) -> (Sprite, Vec<String>) {
        let fill = format!(
            "rgb({},{},{})",
            (color.r * 255.0).round(),
            (color.g * 255.0).round(),
            (color.b * 255.0).round()
        );
        let options = resvg::usvg::Options::default();
        let mut images = BTreeMap::new();
        let mut failed = vec![];
        for (name, svg) in icons {
            // Presentation attributes inherit: a fill on the root colours every unfilled shape.
            let coloured = svg.replacen(
                "<svg ",
                &format!("<svg fill=\"{fill}\" fill-opacity=\"{}\" ", color.a),
                1,
            );
            let Ok(tree) = resvg::usvg::Tree::from_str(&coloured, &options) else {
                failed.push(name.to_string());
                continue;
            };
            let size = tree.size();
            let (w, h) = (
                (size.width() * ratio as f32).ceil() as u32,
                (size.height() * ratio as f32).ceil() as u32,
            );
            let Some(mut pm) = Pixmap::new(w.max(1), h.max(1)) else {
                failed.push(name.to_string());
                continue;
            };
            resvg::render(
                &tree,
                Transform::from_scale(ratio as f32, ratio as f32),
                &mut pm.as_mut(),
            );
            images.insert(name.to_string(), pm);
        }
        (Sprite { ratio, images }, failed)
    }

    /// The sprite sheet: MapLibre's index JSON and the PNG, icons in rows in name order.
    pub fn sheet(&self) -> Result<(String, Vec<u8>), RenderError> {
        const ROW_WIDTH: u32 = 512;
        let row_width = ROW_WIDTH * self.ratio;
        let (mut x, mut y, mut row_h, mut width) = (0u32, 0u32, 0u32, 0u32);
        let mut places = vec![];
        for (name, pm) in &self.images {
            if x > 0 && x + pm.width() > row_width {
                x = 0;
                y += row_h;
                row_h = 0;
            }
            places.push((name, x, y, pm));
            x += pm.width();
            width = width.max(x);
            row_h = row_h.max(pm.height());
        }
        let height = y + row_h;
        let mut sheet = Pixmap::new(width.max(1), height.max(1))
            .ok_or_else(|| RenderError::Failed("sprite sheet".into()))?;
        let mut index = serde_json::Map::new();
        for (name, x, y, pm) in places {
            sheet.draw_pixmap(
                x as i32,
                y as i32,
                pm.as_ref(),
                &PixmapPaint::default(),
                Transform::identity(),
                None,
            );
            index.insert(
                name.clone(),
                serde_json::json!({"x": x, "y": y, "width": pm.width(), "height": pm.height(), "pixelRatio": self.ratio}),
            );
        }
        Ok((
            serde_json::Value::Object(index).to_string(),
            encode_png(&sheet)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAR: &str = r#"<svg xmlns="http://www.w3.org/2000/svg" width="15" height="15" viewBox="0 0 15 15"><path d="M7.5,0l-2,5h-5l4,3.5l-2,6l5-3.5l5,3.5l-2-6l4-3.5h-5L7.5,0z"/></svg>"#;

    #[test]
    fn rasterizes_in_the_colour_asked_and_packs_a_sheet() {
        let red = Color {
            r: 1.0,
            g: 0.0,
            b: 0.0,
            a: 1.0,
        };
        let (sprite, failed) = Sprite::rasterize([("star", STAR), ("broken", "<svg")], 2, red);
        assert_eq!(failed, vec!["broken".to_string()]);
        let star = &sprite.images["star"];
        assert_eq!((star.width(), star.height()), (30, 30));
        let centre = star.pixel(15, 15).unwrap().demultiply();
        assert_eq!(
            (centre.red(), centre.green(), centre.alpha()),
            (255, 0, 255)
        );
        let (json, png) = sprite.sheet().unwrap();
        let index: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(index["star"]["pixelRatio"], 2);
        assert_eq!(index["star"]["width"], 30);
        assert_eq!(&png[1..4], b"PNG");
    }
}
