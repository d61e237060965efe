//! `NativeBasemap`: the vector tileset of the map routes and the raster renderer over it
//! (whereabouts-core's `tiles`). Rendering runs on a worker thread (`render` is an AsyncTask).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use napi::bindgen_prelude::{AsyncTask, Buffer};
use napi::{Env, Result, Task};
use napi_derive::napi;
use whereabouts_core::tiles::staticmap::{self, ImageFormat, StaticMap};
use whereabouts_core::tiles::style::Color;
use whereabouts_core::tiles::{RenderError, Renderer, Sprite, Style, Tileset};

use crate::{err, guarded};

/// What a tileset holds.
#[napi(object)]
pub struct BasemapInfo {
    pub minzoom: u32,
    pub maxzoom: u32,
    pub tiles: u32,
    /// The MBTiles `metadata` table as a JSON object of strings.
    pub metadata: String,
    pub fontstacks: Vec<String>,
}

/// A sprite sheet: MapLibre's index JSON and the PNG.
#[napi(object)]
pub struct SpriteSheet {
    pub json: String,
    pub png: Buffer,
}

/// A registered style and its icons rasterized at pixel ratios 1 and 2.
struct Themed {
    style: Style,
    sprites: Vec<Sprite>,
}

impl Themed {
    fn sprite(&self, ratio: u32) -> Option<&Sprite> {
        self.sprites
            .iter()
            .find(|s| s.ratio == ratio)
            .or_else(|| self.sprites.last())
    }
}

#[napi]
pub struct NativeBasemap {
    renderer: Arc<Renderer>,
    styles: Mutex<HashMap<String, Arc<Themed>>>,
}

#[napi]
impl NativeBasemap {
    /// Opens and checks an MBTiles file of vector tiles; throws with the reason when it is
    /// missing or unreadable.
    #[napi(factory)]
    pub fn open(path: String) -> Result<NativeBasemap> {
        guarded("NativeBasemap.open", || {
            let set = Tileset::open(Path::new(&path)).map_err(err)?;
            let renderer = Renderer::new(Arc::new(set)).map_err(err)?;
            Ok(NativeBasemap {
                renderer: Arc::new(renderer),
                styles: Mutex::new(HashMap::new()),
            })
        })
    }

    #[napi]
    pub fn info(&self) -> Result<BasemapInfo> {
        let set = self.renderer.tileset();
        let mut meta: Vec<_> = set.metadata.iter().collect();
        meta.sort();
        let map: serde_json::Map<String, serde_json::Value> = meta
            .into_iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        Ok(BasemapInfo {
            minzoom: u32::from(set.minzoom),
            maxzoom: u32::from(set.maxzoom),
            tiles: set.tile_count() as u32,
            metadata: serde_json::Value::Object(map).to_string(),
            fontstacks: set.fontstacks(),
        })
    }

    /// A tile's stored bytes (gzip-compressed MVT, or empty), null when the set has no such tile.
    #[napi]
    pub fn tile(&self, z: u32, x: u32, y: u32) -> Option<Buffer> {
        let z = u8::try_from(z).ok()?;
        self.renderer
            .tileset()
            .raw(z, x, y)
            .map(|b| b.to_vec().into())
    }

    /// Tile z/x/y as gzip-compressed MVT at any zoom, on a worker thread: tiles past the set's
    /// deepest zoom are cut from their ancestor. Null when there is no such tile.
    #[napi(ts_return_type = "Promise<Buffer | null>")]
    pub fn vector_tile(&self, z: u32, x: u32, y: u32) -> AsyncTask<VectorTask> {
        AsyncTask::new(VectorTask {
            renderer: self.renderer.clone(),
            z,
            x,
            y,
        })
    }

    /// A glyph range (`0-255`) of a fontstack, null when absent.
    #[napi]
    pub fn glyphs(&self, fontstack: String, range: String) -> Option<Buffer> {
        self.renderer
            .tileset()
            .glyph_range(&fontstack, &range)
            .map(|b| b.to_vec().into())
    }

    /// Registers (or replaces) the style JSON rendered under `name`, with the basemap's icons
    /// rasterized in `icon_color` (a CSS colour) as its sprite; no sprite without a colour.
    #[napi]
    pub fn set_style(&self, name: String, json: String, icon_color: Option<String>) -> Result<()> {
        guarded("setStyle", || {
            let style = Style::parse(&json).map_err(err)?;
            let mut sprites = vec![];
            if let Some(c) = icon_color {
                let color = Color::parse(&c).ok_or_else(|| err(format!("not a colour: {c}")))?;
                for ratio in [1, 2] {
                    let icons = self.renderer.tileset().icons();
                    let (sprite, failed) = Sprite::rasterize(icons, ratio, color);
                    if !failed.is_empty() {
                        return Err(err(format!(
                            "icons that do not parse: {}",
                            failed.join(", ")
                        )));
                    }
                    sprites.push(sprite);
                }
            }
            let themed = Arc::new(Themed { style, sprites });
            self.styles
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(name, themed);
            Ok(())
        })
    }

    /// The sprite sheet of style `name` at pixel ratio 1 or 2; null when it has none.
    #[napi]
    pub fn sprite(&self, name: String, ratio: u32) -> Result<Option<SpriteSheet>> {
        let themed = self
            .styles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&name)
            .cloned();
        let Some(sprite) = themed
            .as_deref()
            .and_then(|t| t.sprites.iter().find(|s| s.ratio == ratio))
        else {
            return Ok(None);
        };
        let (json, png) = sprite.sheet().map_err(err)?;
        Ok(Some(SpriteSheet {
            json,
            png: png.into(),
        }))
    }

    /// Renders a static map of style `name` on a worker thread: `spec` is the JSON of
    /// whereabouts-core's `StaticMap` (centre, zoom, size, scale, format, paths, markers,
    /// attribution); resolves to the encoded image.
    #[napi(ts_return_type = "Promise<Buffer>")]
    pub fn static_map(&self, name: String, spec: String) -> Result<AsyncTask<StaticTask>> {
        let themed = self
            .styles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&name)
            .cloned()
            .ok_or_else(|| err(format!("no style named {name}")))?;
        let map: StaticMap = serde_json::from_str(&spec).map_err(err)?;
        Ok(AsyncTask::new(StaticTask {
            renderer: self.renderer.clone(),
            themed,
            map,
        }))
    }

    /// Renders tile z/x/y of style `name` as a PNG of 256 x `ratio` pixels a side, on a worker
    /// thread; resolves to null for a tile that does not exist (zoom or x/y out of range).
    #[napi(ts_return_type = "Promise<Buffer | null>")]
    pub fn render(
        &self,
        name: String,
        z: u32,
        x: u32,
        y: u32,
        ratio: u32,
    ) -> Result<AsyncTask<RenderTask>> {
        let themed = self
            .styles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&name)
            .cloned()
            .ok_or_else(|| err(format!("no style named {name}")))?;
        Ok(AsyncTask::new(RenderTask {
            renderer: self.renderer.clone(),
            themed,
            z,
            x,
            y,
            ratio,
        }))
    }
}

/// A blank grey image of `width` x `height` pixels, `format` `png` or `jpeg` (the body of a
/// static map error).
#[napi]
pub fn blank_image(width: u32, height: u32, format: String) -> Result<Buffer> {
    let format = if format == "jpeg" {
        ImageFormat::Jpeg
    } else {
        ImageFormat::Png
    };
    staticmap::blank_image(width, height, format)
        .map(Buffer::from)
        .map_err(err)
}

pub struct StaticTask {
    renderer: Arc<Renderer>,
    themed: Arc<Themed>,
    map: StaticMap,
}

impl Task for StaticTask {
    type Output = Vec<u8>;
    type JsValue = Buffer;

    fn compute(&mut self) -> Result<Vec<u8>> {
        guarded("staticMap", || {
            let sprite = self.themed.sprite(self.map.scale);
            staticmap::render_static(&self.renderer, &self.themed.style, sprite, &self.map)
                .map_err(err)
        })
    }

    fn resolve(&mut self, _env: Env, image: Vec<u8>) -> Result<Buffer> {
        Ok(image.into())
    }
}

pub struct RenderTask {
    renderer: Arc<Renderer>,
    themed: Arc<Themed>,
    z: u32,
    x: u32,
    y: u32,
    ratio: u32,
}

impl Task for RenderTask {
    type Output = Option<Vec<u8>>;
    type JsValue = Option<Buffer>;

    fn compute(&mut self) -> Result<Option<Vec<u8>>> {
        guarded("render", || {
            let Ok(z) = u8::try_from(self.z) else {
                return Ok(None);
            };
            let (style, sprite) = (&self.themed.style, self.themed.sprite(self.ratio));
            match self
                .renderer
                .render_png(style, sprite, z, self.x, self.y, self.ratio)
            {
                Ok(png) => Ok(Some(png)),
                Err(RenderError::NotFound) => Ok(None),
                Err(e) => Err(err(e)),
            }
        })
    }

    fn resolve(&mut self, _env: Env, png: Option<Vec<u8>>) -> Result<Option<Buffer>> {
        Ok(png.map(Buffer::from))
    }
}

pub struct VectorTask {
    renderer: Arc<Renderer>,
    z: u32,
    x: u32,
    y: u32,
}

impl Task for VectorTask {
    type Output = Option<Vec<u8>>;
    type JsValue = Option<Buffer>;

    fn compute(&mut self) -> Result<Option<Vec<u8>>> {
        guarded("vectorTile", || {
            let Ok(z) = u8::try_from(self.z) else {
                return Ok(None);
            };
            self.renderer
                .tileset()
                .vector_tile(z, self.x, self.y)
                .map_err(err)
        })
    }

    fn resolve(&mut self, _env: Env, tile: Option<Vec<u8>>) -> Result<Option<Buffer>> {
        Ok(tile.map(Buffer::from))
    }
}
