//! The subset of the MapLibre style specification (v8) the raster renderer interprets: layers of
//! type `background`, `fill`, `line`, `circle` and `symbol`, with their `filter`, zoom range,
//! and paint and layout properties written as constants, legacy zoom functions (`stops`) or
//! expressions: `get`, `has`, `zoom`, `geometry-type`, `literal`, comparisons, `all`, `any`,
//! `!`, `match`, `case`, `coalesce`, `step`, `interpolate` (linear and exponential),
//! `to-string`, `to-number`, `concat`, `upcase`, `downcase`. Anything else evaluates to null,
//! and the property then takes its default.

use serde_json::Value as Json;

use super::mvt::{Feature, GeomType, Layer, Value};

/// A colour with straight (not premultiplied) channels in 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Color {
    pub r: f32,
    pub g: f32,
    pub b: f32,
    pub a: f32,
}

impl Color {
    pub const BLACK: Color = Color {
        r: 0.0,
        g: 0.0,
        b: 0.0,
        a: 1.0,
    };
    pub const TRANSPARENT: Color = Color {
        r: 0.0,
        g: 0.0,
        b: 0.0,
        a: 0.0,
    };

    /// Parses CSS colours: `#rgb`, `#rrggbb`, `#rrggbbaa`, `rgb()`, `rgba()`, `hsl()`, `hsla()`,
    /// and a few names.
    pub fn parse(s: &str) -> Option<Color> {
        let s = s.trim();
        if let Some(hex) = s.strip_prefix('#') {
            let v: Vec<u8> = match hex.len() {
                3 | 4 => hex
                    .chars()
                    .map(|c| c.to_digit(16).map(|d| (d * 17) as u8))
                    .collect::<Option<_>>()?,
                6 | 8 => (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                    .collect::<Option<_>>()?,
                _ => return None,
            };
            let a = v.get(3).map_or(1.0, |&a| f32::from(a) / 255.0);
            return Some(Color {
                r: f32::from(v[0]) / 255.0,
                g: f32::from(v[1]) / 255.0,
                b: f32::from(v[2]) / 255.0,
                a,
            });
        }
        let open = s.find('(')?;
        let name = &s[..open];
        let args: Vec<&str> = s[open + 1..]
            .strip_suffix(')')?
            .split(',')
            .map(str::trim)
            .collect();
        let num = |t: &str| t.trim_end_matches('%').parse::<f32>().ok();
        let alpha = if args.len() == 4 { num(args[3])? } else { 1.0 };
        match (name, args.len()) {
            ("rgb" | "rgba", 3 | 4) => Some(Color {
                r: num(args[0])? / 255.0,
                g: num(args[1])? / 255.0,
                b: num(args[2])? / 255.0,
                a: alpha,
            }),
            ("hsl" | "hsla", 3 | 4) => {
                let (h, sat, l) = (
                    num(args[0])? / 360.0,
                    num(args[1])? / 100.0,
                    num(args[2])? / 100.0,
                );
                let q = if l < 0.5 {
                    l * (1.0 + sat)
                } else {
                    l + sat - l * sat
                };
                let p = 2.0 * l - q;
                let hue = |mut t: f32| {
                    t = t.rem_euclid(1.0);
                    if t < 1.0 / 6.0 {
                        p + (q - p) * 6.0 * t
                    } else if t < 0.5 {
                        q
                    } else if t < 2.0 / 3.0 {
                        p + (q - p) * (2.0 / 3.0 - t) * 6.0
                    } else {
                        p
                    }
                };
                Some(Color {
                    r: hue(h + 1.0 / 3.0),
                    g: hue(h),
                    b: hue(h - 1.0 / 3.0),
                    a: alpha,
                })
            }
            _ => None,
        }
        .or(match s {
            "white" => Some(Color {
                r: 1.0,
                g: 1.0,
                b: 1.0,
                a: 1.0,
            }),
            "black" => Some(Color::BLACK),
            "transparent" => Some(Color::TRANSPARENT),
            _ => None,
        })
    }

    /// The colour as tiny-skia's, with an extra opacity factor.
    pub fn to_skia(self, opacity: f32) -> tiny_skia::Color {
        tiny_skia::Color::from_rgba(
            self.r.clamp(0.0, 1.0),
            self.g.clamp(0.0, 1.0),
            self.b.clamp(0.0, 1.0),
            (self.a * opacity).clamp(0.0, 1.0),
        )
        .unwrap_or(tiny_skia::Color::TRANSPARENT)
    }
}

/// The value of an evaluated expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Color(Color),
    Array(Vec<Val>),
}

impl Val {
    pub fn num(&self) -> Option<f64> {
        match self {
            Val::Num(n) => Some(*n),
            _ => None,
        }
    }

    pub fn truthy(&self) -> bool {
        matches!(self, Val::Bool(true))
    }

    pub fn color(&self) -> Option<Color> {
        match self {
            Val::Color(c) => Some(*c),
            Val::Str(s) => Color::parse(s),
            _ => None,
        }
    }

    /// Text as `to-string` writes it.
    pub fn text(&self) -> String {
        match self {
            Val::Null => String::new(),
            Val::Bool(b) => b.to_string(),
            Val::Num(n) if n.fract() == 0.0 && n.abs() < 1e15 => format!("{}", *n as i64),
            Val::Num(n) => n.to_string(),
            Val::Str(s) => s.clone(),
            Val::Color(c) => format!(
                "rgba({},{},{},{})",
                c.r * 255.0,
                c.g * 255.0,
                c.b * 255.0,
                c.a
            ),
            Val::Array(_) => String::new(),
        }
    }

    fn from_json(j: &Json) -> Val {
        match j {
            Json::Null => Val::Null,
            Json::Bool(b) => Val::Bool(*b),
            Json::Number(n) => Val::Num(n.as_f64().unwrap_or(0.0)),
            Json::String(s) => Val::Str(s.clone()),
            Json::Array(a) => Val::Array(a.iter().map(Val::from_json).collect()),
            Json::Object(_) => Val::Null,
        }
    }

    fn from_prop(v: &Value) -> Val {
        match v {
            Value::String(s) => Val::Str(s.clone()),
            Value::Number(n) => Val::Num(*n),
            Value::Bool(b) => Val::Bool(*b),
        }
    }
}

/// What an expression is evaluated against: the zoom and, for data expressions, one feature.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub zoom: f64,
    pub feature: Option<(&'a Layer, &'a Feature)>,
}

impl<'a> Ctx<'a> {
    fn get(&self, key: &str) -> Val {
        self.feature
            .and_then(|(l, f)| l.property(f, key))
            .map_or(Val::Null, Val::from_prop)
    }
}

/// Evaluates a property value: a constant, a legacy `{stops, base}` zoom function, or an expression.
pub fn eval(j: &Json, ctx: &Ctx) -> Val {
    match j {
        Json::Array(a) => match a.first() {
            Some(Json::String(op)) => eval_op(op, &a[1..], ctx),
            _ => Val::from_json(j),
        },
        Json::Object(o) => match o.get("stops") {
            Some(Json::Array(stops)) => {
                let base = o.get("base").and_then(Json::as_f64).unwrap_or(1.0);
                let stops: Vec<(f64, Val)> = stops
                    .iter()
                    .filter_map(|s| Some((s.get(0)?.as_f64()?, Val::from_json(s.get(1)?))))
                    .collect();
                interpolate_stops(&stops, ctx.zoom, base)
            }
            _ => Val::Null,
        },
        _ => Val::from_json(j),
    }
}

fn compare(a: &Val, b: &Val) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Val::Num(x), Val::Num(y)) => x.partial_cmp(y),
        (Val::Str(x), Val::Str(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

fn eval_op(op: &str, args: &[Json], ctx: &Ctx) -> Val {
    let arg = |i: usize| args.get(i).map_or(Val::Null, |a| eval(a, ctx));
    match op {
        "literal" => args.first().map_or(Val::Null, Val::from_json),
        "get" => match arg(0) {
            Val::Str(k) => ctx.get(&k),
            _ => Val::Null,
        },
        "has" => match arg(0) {
            Val::Str(k) => Val::Bool(ctx.get(&k) != Val::Null),
            _ => Val::Bool(false),
        },
        "zoom" => Val::Num(ctx.zoom),
        "geometry-type" => Val::Str(
            match ctx.feature.map(|(_, f)| f.kind) {
                Some(GeomType::Point) => "Point",
                Some(GeomType::LineString) => "LineString",
                Some(GeomType::Polygon) => "Polygon",
                _ => "Unknown",
            }
            .into(),
        ),
        "==" => Val::Bool(arg(0) == arg(1)),
        "!=" => Val::Bool(arg(0) != arg(1)),
        "<" | "<=" | ">" | ">=" => {
            use std::cmp::Ordering::*;
            let c = compare(&arg(0), &arg(1));
            Val::Bool(match (op, c) {
                (_, None) => false,
                ("<", Some(o)) => o == Less,
                ("<=", Some(o)) => o != Greater,
                (">", Some(o)) => o == Greater,
                (_, Some(o)) => o != Less,
            })
        }
        "all" => Val::Bool(args.iter().all(|a| eval(a, ctx).truthy())),
        "any" => Val::Bool(args.iter().any(|a| eval(a, ctx).truthy())),
        "!" => Val::Bool(!arg(0).truthy()),
        "match" => {
            let input = arg(0);
            let mut i = 1;
            while i + 1 < args.len() {
                let labels = match &args[i] {
                    Json::Array(ls) => ls.iter().map(Val::from_json).collect(),
                    l => vec![Val::from_json(l)],
                };
                if labels.contains(&input) {
                    return eval(&args[i + 1], ctx);
                }
                i += 2;
            }
            args.get(i).map_or(Val::Null, |a| eval(a, ctx))
        }
        "case" => {
            let mut i = 0;
            while i + 1 < args.len() {
                if eval(&args[i], ctx).truthy() {
                    return eval(&args[i + 1], ctx);
                }
                i += 2;
            }
            args.get(i).map_or(Val::Null, |a| eval(a, ctx))
        }
        "coalesce" => args
            .iter()
            .map(|a| eval(a, ctx))
            .find(|v| *v != Val::Null)
            .unwrap_or(Val::Null),
        "step" => {
            let Some(input) = arg(0).num() else {
                return Val::Null;
            };
            let mut out = args.get(1).map_or(Val::Null, |a| eval(a, ctx));
            let mut i = 2;
            while i + 1 < args.len() {
                match args[i].as_f64() {
                    Some(stop) if input >= stop => out = eval(&args[i + 1], ctx),
                    _ => break,
                }
                i += 2;
            }
            out
        }
        "interpolate" => {
            let base = match args.first().and_then(Json::as_array).map(|a| a.as_slice()) {
                Some([t, b, ..]) if t == "exponential" => b.as_f64().unwrap_or(1.0),
                _ => 1.0,
            };
            let Some(input) = arg(1).num() else {
                return Val::Null;
            };
            let stops: Vec<(f64, Val)> = args[2.min(args.len())..]
                .chunks_exact(2)
                .filter_map(|c| Some((c[0].as_f64()?, eval(&c[1], ctx))))
                .collect();
            interpolate_stops(&stops, input, base)
        }
        "to-string" => Val::Str(arg(0).text()),
        "to-number" => match arg(0) {
            Val::Num(n) => Val::Num(n),
            Val::Str(s) => s.trim().parse().map_or(Val::Null, Val::Num),
            Val::Bool(b) => Val::Num(f64::from(u8::from(b))),
            _ => Val::Null,
        },
        "concat" => Val::Str(args.iter().map(|a| eval(a, ctx).text()).collect()),
        "upcase" => Val::Str(arg(0).text().to_uppercase()),
        "downcase" => Val::Str(arg(0).text().to_lowercase()),
        _ => Val::Null,
    }
}

fn interpolate_stops(stops: &[(f64, Val)], input: f64, base: f64) -> Val {
    let Some(first) = stops.first() else {
        return Val::Null;
    };
    if input <= first.0 {
        return first.1.clone();
    }
    for w in stops.windows(2) {
        let ((z0, v0), (z1, v1)) = (&w[0], &w[1]);
        if input < *z1 {
            let span = z1 - z0;
            let t = if span <= 0.0 {
                0.0
            } else if (base - 1.0).abs() < 1e-9 {
                (input - z0) / span
            } else {
                (base.powf(input - z0) - 1.0) / (base.powf(span) - 1.0)
            };
            return lerp(v0, v1, t);
        }
    }
    stops.last().expect("not empty").1.clone()
}

fn lerp(a: &Val, b: &Val, t: f64) -> Val {
    match (a, b) {
        (Val::Num(x), Val::Num(y)) => Val::Num(x + (y - x) * t),
        (Val::Array(x), Val::Array(y)) if x.len() == y.len() => {
            Val::Array(x.iter().zip(y).map(|(p, q)| lerp(p, q, t)).collect())
        }
        _ => match (a.color(), b.color()) {
            (Some(c0), Some(c1)) => {
                let t = t as f32;
                let m = |p: f32, q: f32| p + (q - p) * t;
                Val::Color(Color {
                    r: m(c0.r, c1.r),
                    g: m(c0.g, c1.g),
                    b: m(c0.b, c1.b),
                    a: m(c0.a, c1.a),
                })
            }
            _ => {
                if t < 1.0 {
                    a.clone()
                } else {
                    b.clone()
                }
            }
        },
    }
}

/// The layer types drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Background,
    Fill,
    Line,
    Circle,
    Symbol,
    /// A type the renderer does not draw (raster, heatmap...).
    Other,
}

/// One style layer.
#[derive(Debug, Clone)]
pub struct StyleLayer {
    pub id: String,
    pub kind: Kind,
    pub source_layer: Option<String>,
    pub minzoom: f64,
    pub maxzoom: f64,
    pub filter: Option<Json>,
    pub layout: serde_json::Map<String, Json>,
    pub paint: serde_json::Map<String, Json>,
}

impl StyleLayer {
    /// Whether the layer is drawn at `zoom` (its range and `visibility`).
    pub fn shown_at(&self, zoom: f64) -> bool {
        zoom >= self.minzoom
            && zoom < self.maxzoom
            && self.layout.get("visibility").and_then(Json::as_str) != Some("none")
    }

    /// Whether a feature passes the layer's filter.
    pub fn accepts(&self, ctx: &Ctx) -> bool {
        self.filter.as_ref().is_none_or(|f| eval(f, ctx).truthy())
    }

    fn prop(&self, name: &str) -> Option<&Json> {
        self.paint.get(name).or_else(|| self.layout.get(name))
    }

    /// A numeric paint or layout property, or `default`.
    pub fn number(&self, name: &str, ctx: &Ctx, default: f64) -> f64 {
        self.prop(name)
            .and_then(|j| eval(j, ctx).num())
            .unwrap_or(default)
    }

    /// A colour property, or `default`.
    pub fn color(&self, name: &str, ctx: &Ctx, default: Color) -> Color {
        self.prop(name)
            .and_then(|j| eval(j, ctx).color())
            .unwrap_or(default)
    }

    /// A string property (enums such as `line-cap`), or `default`.
    pub fn string(&self, name: &str, ctx: &Ctx, default: &str) -> String {
        match self.prop(name).map(|j| eval(j, ctx)) {
            Some(Val::Str(s)) => s,
            _ => default.to_string(),
        }
    }

    /// A numeric array property (`line-dasharray`, `text-offset`).
    pub fn numbers(&self, name: &str, ctx: &Ctx) -> Option<Vec<f64>> {
        match self.prop(name).map(|j| eval(j, ctx)) {
            Some(Val::Array(a)) => a.iter().map(Val::num).collect(),
            _ => None,
        }
    }

    /// The label of a feature: `text-field` as an expression or a `{property}` template.
    pub fn text(&self, ctx: &Ctx) -> String {
        match self.layout.get("text-field") {
            Some(Json::String(t)) => {
                let mut out = String::new();
                let mut rest = t.as_str();
                while let Some(open) = rest.find('{') {
                    out.push_str(&rest[..open]);
                    match rest[open..].find('}') {
                        Some(close) => {
                            out.push_str(&ctx.get(&rest[open + 1..open + close]).text());
                            rest = &rest[open + close + 1..];
                        }
                        None => {
                            rest = &rest[open..];
                            break;
                        }
                    }
                }
                out.push_str(rest);
                out
            }
            Some(j) => eval(j, ctx).text(),
            None => String::new(),
        }
    }
}

/// A parsed style: its layers in drawing order.
#[derive(Debug, Clone)]
pub struct Style {
    pub layers: Vec<StyleLayer>,
}

impl Style {
    /// Parses a style document; layers of unknown types are kept as [`Kind::Other`].
    pub fn parse(json: &str) -> Result<Style, String> {
        let doc: Json =
            serde_json::from_str(json).map_err(|e| format!("style is not JSON: {e}"))?;
        if doc.get("version").and_then(Json::as_u64) != Some(8) {
            return Err("style version is not 8".into());
        }
        let layers = doc
            .get("layers")
            .and_then(Json::as_array)
            .ok_or("style has no layers")?;
        let obj = |l: &Json, k: &str| {
            l.get(k)
                .and_then(Json::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let layers = layers
            .iter()
            .map(|l| {
                let kind = match l.get("type").and_then(Json::as_str) {
                    Some("background") => Kind::Background,
                    Some("fill") => Kind::Fill,
                    Some("line") => Kind::Line,
                    Some("circle") => Kind::Circle,
                    Some("symbol") => Kind::Symbol,
                    _ => Kind::Other,
                };
                StyleLayer {
                    id: l
                        .get("id")
                        .and_then(Json::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    kind,
                    source_layer: l
                        .get("source-layer")
                        .and_then(Json::as_str)
                        .map(String::from),
                    minzoom: l.get("minzoom").and_then(Json::as_f64).unwrap_or(0.0),
                    maxzoom: l
                        .get("maxzoom")
                        .and_then(Json::as_f64)
                        .unwrap_or(f64::INFINITY),
                    filter: l.get("filter").cloned(),
                    layout: obj(l, "layout"),
                    paint: obj(l, "paint"),
                }
            })
            .collect();
        Ok(Style { layers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn zoom(z: f64) -> Ctx<'static> {
        Ctx {
            zoom: z,
            feature: None,
        }
    }

    #[test]
    fn parses_colours() {
        assert_eq!(
            Color::parse("#fff"),
            Some(Color {
                r: 1.0,
                g: 1.0,
                b: 1.0,
                a: 1.0
            })
        );
        assert_eq!(Color::parse("#00000080").unwrap().a, 128.0 / 255.0);
        assert_eq!(
            Color::parse("rgba(255, 0, 0, 0.5)"),
            Some(Color {
                r: 1.0,
                g: 0.0,
                b: 0.0,
                a: 0.5
            })
        );
        let c = Color::parse("hsl(120, 100%, 50%)").unwrap();
        assert!((c.g - 1.0).abs() < 1e-6 && c.r.abs() < 1e-6);
        assert_eq!(Color::parse("nonsense"), None);
    }

    #[test]
    fn evaluates_zoom_functions_and_expressions() {
        let e = json!(["interpolate", ["linear"], ["zoom"], 2, 1, 6, 5]);
        assert_eq!(eval(&e, &zoom(4.0)), Val::Num(3.0));
        assert_eq!(eval(&e, &zoom(0.0)), Val::Num(1.0));
        assert_eq!(eval(&e, &zoom(9.0)), Val::Num(5.0));
        let ex = json!(["interpolate", ["exponential", 2], ["zoom"], 0, 0, 2, 3]);
        assert_eq!(eval(&ex, &zoom(1.0)), Val::Num(1.0));
        let s = json!(["step", ["zoom"], "a", 3, "b", 5, "c"]);
        assert_eq!(eval(&s, &zoom(4.0)), Val::Str("b".into()));
        let stops = json!({"base": 1, "stops": [[0, 1], [10, 11]]});
        assert_eq!(eval(&stops, &zoom(5.0)), Val::Num(6.0));
        let colours = json!([
            "interpolate",
            ["linear"],
            ["zoom"],
            0,
            "#000000",
            10,
            "#ffffff"
        ]);
        let c = eval(&colours, &zoom(5.0)).color().unwrap();
        assert!((c.r - 0.5).abs() < 1e-6);
    }

    #[test]
    fn evaluates_data_expressions_on_features() {
        let tile =
            super::super::mvt::Tile::decode(&super::super::mvt::tests::sample_tile()).unwrap();
        let layer = tile.layer("place").unwrap();
        let ctx = Ctx {
            zoom: 3.0,
            feature: Some((layer, &layer.features[0])),
        };
        let m = json!(["match", ["get", "name"], ["Paris", "Lyon"], 1, 0]);
        assert_eq!(eval(&m, &ctx), Val::Num(1.0));
        let c = json!(["case", ["<", ["get", "rank"], 2], "big", "small"]);
        assert_eq!(eval(&c, &ctx), Val::Str("small".into()));
        let f = json!([
            "all",
            ["==", ["geometry-type"], "Point"],
            ["has", "name"],
            ["!", ["has", "class"]]
        ]);
        assert!(eval(&f, &ctx).truthy());
        let style = Style::parse(
            r#"{"version":8,"sources":{},"layers":[{"id":"t","type":"symbol","layout":{"text-field":"{name} ({rank})"}}]}"#,
        )
        .unwrap();
        assert_eq!(style.layers[0].text(&ctx), "Paris (3)");
        let upper = json!(["upcase", ["coalesce", ["get", "name:xx"], ["get", "name"]]]);
        assert_eq!(eval(&upper, &ctx), Val::Str("PARIS".into()));
    }
}
