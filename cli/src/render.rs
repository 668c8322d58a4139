//! Draws a world to a PNG or SVG image.
//!
//! This module is a float edge for drawing only: it reads the fixed-point
//! state, converts it to `f64` and never feeds anything back into the
//! simulation.

use bitroom_sim::dynamics::ContactView;
use bitroom_sim::{BodyKind, ShapeGeometry, Transform, Vec2, World};
use std::f64::consts::{PI, TAU};
use std::fmt::Write as _;
use std::path::Path;

/// Largest image side in pixels.
const MAX_SIDE: f64 = 1600.0;
/// Smallest image side in pixels.
const MIN_SIDE: f64 = 400.0;
/// Outline width in pixels.
const OUTLINE_PX: f64 = 1.5;
/// Segment shapes' line width in pixels.
const SEGMENT_PX: f64 = 2.5;
/// Contact dot radius: metres, clamped to a pixel range.
const CONTACT_DOT: (f64, f64, f64) = (0.06, 1.0, 3.0);
/// Contact normal length: metres, clamped to a pixel range.
const CONTACT_NORMAL: (f64, f64, f64) = (0.3, 3.0, 14.0);
/// Contact marker opacity.
const CONTACT_ALPHA: u8 = 200;
/// Joint line width in pixels.
const JOINT_PX: f64 = 1.5;
/// Joint anchor dot radius: metres, clamped to a pixel range.
const JOINT_DOT: (f64, f64, f64) = (0.05, 1.5, 3.0);

/// An output format, chosen by file extension.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Png,
    Svg,
}

/// Draws `w` to `path`: PNG if it ends in `.png`, SVG if `.svg`.
///
/// # Errors
/// An unsupported extension, or an I/O or encoding failure.
pub fn render_to_file(w: &World, path: &Path) -> Result<(), String> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let format = match ext.as_deref() {
        Some("png") => Format::Png,
        Some("svg") => Format::Svg,
        Some(other) => {
            return Err(format!(
                "unsupported image extension \".{other}\": use .png or .svg"
            ))
        }
        None => return Err("output file has no extension: use .png or .svg".into()),
    };
    let scene = Scene::from_world(w);
    match format {
        Format::Png => {
            let bytes = scene.to_png()?;
            std::fs::write(path, bytes).map_err(|e| e.to_string())
        }
        Format::Svg => std::fs::write(path, scene.to_svg()).map_err(|e| e.to_string()),
    }
}

/// A point in world (metres, y up) or pixel (y down) space.
#[derive(Clone, Copy, PartialEq, Debug)]
struct P {
    x: f64,
    y: f64,
}

impl P {
    fn new(x: f64, y: f64) -> P {
        P { x, y }
    }
    fn of(v: Vec2) -> P {
        P::new(v.x.to_f64(), v.y.to_f64())
    }
    fn add(self, o: P) -> P {
        P::new(self.x + o.x, self.y + o.y)
    }
    fn sub(self, o: P) -> P {
        P::new(self.x - o.x, self.y - o.y)
    }
    fn scale(self, s: f64) -> P {
        P::new(self.x * s, self.y * s)
    }
    fn len(self) -> f64 {
        self.x.hypot(self.y)
    }
}

/// An axis-aligned box in world space.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Rect {
    lo: P,
    hi: P,
}

impl Rect {
    fn union(self, o: Rect) -> Rect {
        Rect {
            lo: P::new(self.lo.x.min(o.lo.x), self.lo.y.min(o.lo.y)),
            hi: P::new(self.hi.x.max(o.hi.x), self.hi.y.max(o.hi.y)),
        }
    }
    fn intersect(self, o: Rect) -> Option<Rect> {
        let r = Rect {
            lo: P::new(self.lo.x.max(o.lo.x), self.lo.y.max(o.lo.y)),
            hi: P::new(self.hi.x.min(o.hi.x), self.hi.y.min(o.hi.y)),
        };
        (r.lo.x <= r.hi.x && r.lo.y <= r.hi.y).then_some(r)
    }
    fn expand(self, m: f64) -> Rect {
        Rect {
            lo: P::new(self.lo.x - m, self.lo.y - m),
            hi: P::new(self.hi.x + m, self.hi.y + m),
        }
    }
    /// Scaled by `k` about its centre.
    fn scale_about_center(self, k: f64) -> Rect {
        let c = self.center();
        let h = P::new(self.width() * 0.5 * k, self.height() * 0.5 * k);
        Rect {
            lo: c.sub(h),
            hi: c.add(h),
        }
    }
    fn width(self) -> f64 {
        self.hi.x - self.lo.x
    }
    fn height(self) -> f64 {
        self.hi.y - self.lo.y
    }
    fn center(self) -> P {
        P::new((self.lo.x + self.hi.x) * 0.5, (self.lo.y + self.hi.y) * 0.5)
    }
}

/// An RGB colour.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Rgb(u8, u8, u8);

impl Rgb {
    fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

const BACKGROUND: Rgb = Rgb(250, 250, 246);
const GRID: Rgb = Rgb(228, 228, 222);
const AXIS: Rgb = Rgb(200, 200, 192);
const CONTACT: Rgb = Rgb(220, 30, 30);
const JOINT: Rgb = Rgb(20, 140, 130);

/// Fill and outline colours.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Style {
    fill: Rgb,
    stroke: Rgb,
}

const STATIC: Style = Style {
    fill: Rgb(168, 168, 168),
    stroke: Rgb(92, 92, 92),
};
const KINEMATIC: Style = Style {
    fill: Rgb(120, 160, 225),
    stroke: Rgb(40, 72, 145),
};
const AWAKE: Style = Style {
    fill: Rgb(246, 164, 74),
    stroke: Rgb(158, 82, 18),
};
const ASLEEP: Style = Style {
    fill: Rgb(172, 160, 186),
    stroke: Rgb(96, 82, 112),
};

/// What a filled outline came from (SVG element choice).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Polygon,
    Capsule,
}

/// One thing to draw, in world coordinates.
#[derive(Clone, PartialEq, Debug)]
enum Item {
    /// A convex filled outline (counter-clockwise).
    Outline {
        pts: Vec<P>,
        kind: Kind,
        style: Style,
    },
    /// A disc with a line from its centre along the body's x axis.
    Disc { c: P, r: f64, axis: P, style: Style },
    /// A segment shape.
    Segment { a: P, b: P, color: Rgb },
}

/// World-to-pixel mapping.
#[derive(Clone, Copy, PartialEq, Debug)]
struct View {
    width: u32,
    height: u32,
    center: P,
    /// Pixels per metre.
    scale: f64,
}

impl View {
    /// Fits `r` into an image of at most `MAX_SIDE` pixels, keeping the aspect ratio.
    fn fit(r: Rect) -> View {
        let vw = r.width().max(1e-3);
        let vh = r.height().max(1e-3);
        let aspect = vh / vw;
        let (w, h) = if aspect <= 1.0 {
            (MAX_SIDE, (MAX_SIDE * aspect).clamp(MIN_SIDE, MAX_SIDE))
        } else {
            ((MAX_SIDE / aspect).clamp(MIN_SIDE, MAX_SIDE), MAX_SIDE)
        };
        let (w, h) = (w.round(), h.round());
        View {
            width: w as u32,
            height: h as u32,
            center: r.center(),
            scale: (w / vw).min(h / vh),
        }
    }
    /// World to pixel (y flipped).
    fn px(&self, p: P) -> P {
        P::new(
            f64::from(self.width) * 0.5 + (p.x - self.center.x) * self.scale,
            f64::from(self.height) * 0.5 - (p.y - self.center.y) * self.scale,
        )
    }
    /// The visible world rectangle.
    fn world_rect(&self) -> Rect {
        let h = P::new(
            f64::from(self.width) * 0.5 / self.scale,
            f64::from(self.height) * 0.5 / self.scale,
        );
        Rect {
            lo: self.center.sub(h),
            hi: self.center.add(h),
        }
    }
    /// A size given in metres, in pixels clamped to `[min, max]`.
    fn marker_px(&self, (metres, min, max): (f64, f64, f64)) -> f64 {
        (metres * self.scale).clamp(min, max)
    }
    /// Grid spacing in metres: 1, 10, 100, … whichever keeps lines apart.
    fn grid_spacing(&self) -> f64 {
        let mut g = 1.0;
        while g * self.scale < 12.0 && g < 1e6 {
            g *= 10.0;
        }
        g
    }
}

/// Everything to draw, plus the view.
#[derive(Clone, PartialEq, Debug)]
struct Scene {
    view: View,
    items: Vec<Item>,
    /// Contact points and normals (world).
    contacts: Vec<(P, P)>,
    /// Joints as polylines (world): body A's centre of mass, anchor A,
    /// anchor B, body B's centre of mass (a static body's anchor stands in
    /// for its centre).
    joints: Vec<[P; 4]>,
}

impl Scene {
    fn from_world(w: &World) -> Scene {
        // Gather shapes: static first so moving bodies draw on top.
        let mut layers: [Vec<(ShapeGeometry, Transform, Style)>; 3] = Default::default();
        let mut moving: Option<Rect> = None;
        let mut statics: Vec<Rect> = Vec::new();
        for id in w.bodies() {
            let (Ok(xf), Ok(kind), Ok(awake), Ok(shapes)) = (
                w.transform(id),
                w.body_kind(id),
                w.is_awake(id),
                w.body_shapes(id),
            ) else {
                continue;
            };
            let (layer, style) = match kind {
                BodyKind::Static => (0, STATIC),
                BodyKind::Kinematic => (1, KINEMATIC),
                BodyKind::Dynamic if awake => (2, AWAKE),
                BodyKind::Dynamic => (2, ASLEEP),
            };
            for sid in shapes {
                let Ok(g) = w.shape_geometry(sid) else {
                    continue;
                };
                let bb = g.aabb(xf);
                let r = Rect {
                    lo: P::of(bb.lower),
                    hi: P::of(bb.upper),
                };
                if kind == BodyKind::Static {
                    statics.push(r);
                } else {
                    moving = Some(moving.map_or(r, |m| m.union(r)));
                }
                layers[layer].push((g, xf, style));
            }
        }
        let region = view_region(moving, &statics);
        let view = View::fit(region);
        let items = layers
            .into_iter()
            .flatten()
            .map(|(g, xf, style)| shape_item(g, xf, style, &view))
            .collect();
        let contacts = w
            .contacts()
            .map(|c: ContactView| (P::of(c.point), P::of(c.normal)))
            .collect();
        let joints = w
            .joints()
            .filter_map(|j| {
                let (a, b) = w.joint_bodies(j).ok()?;
                let (pa, pb) = w.joint_world_anchors(j).ok()?;
                // A static body's centre can be anywhere (a ground body at
                // the origin): start at its anchor instead.
                let centre = |body, anchor| match w.body_kind(body) {
                    Ok(BodyKind::Static) => Some(anchor),
                    _ => w.world_center(body).ok(),
                };
                let (ca, cb) = (centre(a, pa)?, centre(b, pb)?);
                Some([P::of(ca), P::of(pa), P::of(pb), P::of(cb)])
            })
            .collect();
        Scene {
            view,
            items,
            contacts,
            joints,
        }
    }

    /// Grid lines in pixel space: (from, to, is_axis).
    fn grid_lines(&self) -> Vec<(P, P, bool)> {
        let v = &self.view;
        let r = v.world_rect();
        let g = v.grid_spacing();
        let mut out = Vec::new();
        let mut x = (r.lo.x / g).ceil() * g;
        while x <= r.hi.x {
            out.push((
                v.px(P::new(x, r.lo.y)),
                v.px(P::new(x, r.hi.y)),
                x.abs() < g * 1e-6,
            ));
            x += g;
        }
        let mut y = (r.lo.y / g).ceil() * g;
        while y <= r.hi.y {
            out.push((
                v.px(P::new(r.lo.x, y)),
                v.px(P::new(r.hi.x, y)),
                y.abs() < g * 1e-6,
            ));
            y += g;
        }
        out
    }

    fn to_png(&self) -> Result<Vec<u8>, String> {
        use tiny_skia::{FillRule, LineCap, LineJoin, Paint, PathBuilder, Pixmap, Stroke};
        let v = &self.view;
        let mut pm = Pixmap::new(v.width, v.height).ok_or("cannot allocate the image")?;
        pm.fill(color(BACKGROUND));
        let id = tiny_skia::Transform::identity();
        let paint = |c: Rgb| {
            let mut p = Paint::default();
            p.set_color(color(c));
            p.anti_alias = true;
            p
        };
        let stroke = |width: f64| Stroke {
            width: width as f32,
            line_cap: LineCap::Round,
            line_join: LineJoin::Round,
            ..Stroke::default()
        };
        let line = |pm: &mut Pixmap, a: P, b: P, c: Rgb, width: f64| {
            let mut pb = PathBuilder::new();
            pb.move_to(a.x as f32, a.y as f32);
            pb.line_to(b.x as f32, b.y as f32);
            if let Some(path) = pb.finish() {
                pm.stroke_path(&path, &paint(c), &stroke(width), id, None);
            }
        };
        let closed = |pm: &mut Pixmap, pts: &[P], style: Style| {
            let mut pb = PathBuilder::new();
            for (i, p) in pts.iter().enumerate() {
                if i == 0 {
                    pb.move_to(p.x as f32, p.y as f32);
                } else {
                    pb.line_to(p.x as f32, p.y as f32);
                }
            }
            pb.close();
            if let Some(path) = pb.finish() {
                pm.fill_path(&path, &paint(style.fill), FillRule::Winding, id, None);
                pm.stroke_path(&path, &paint(style.stroke), &stroke(OUTLINE_PX), id, None);
            }
        };
        for (a, b, axis) in self.grid_lines() {
            line(&mut pm, a, b, if axis { AXIS } else { GRID }, 1.0);
        }
        // Clip in world space to a little beyond the image: huge ground boxes
        // would otherwise hand the rasteriser coordinates far outside it.
        let clip = v.world_rect().expand(8.0 / v.scale);
        for item in &self.items {
            match item {
                Item::Outline { pts, style, .. } => {
                    let pts = clip_convex(pts, clip);
                    if pts.len() >= 3 {
                        let px: Vec<P> = pts.iter().map(|&p| v.px(p)).collect();
                        closed(&mut pm, &px, *style);
                    }
                }
                Item::Disc { c, r, axis, style } => {
                    let pts = clip_convex(&disc_points(*c, *r, v.scale), clip);
                    if pts.len() >= 3 {
                        let px: Vec<P> = pts.iter().map(|&p| v.px(p)).collect();
                        closed(&mut pm, &px, *style);
                        line(&mut pm, v.px(*c), v.px(*axis), style.stroke, OUTLINE_PX);
                    }
                }
                Item::Segment { a, b, color } => {
                    if let Some((a, b)) = clip_segment(*a, *b, clip) {
                        line(&mut pm, v.px(a), v.px(b), *color, SEGMENT_PX);
                    }
                }
            }
        }
        let jdot = v.marker_px(JOINT_DOT);
        for js in &self.joints {
            let px: Vec<P> = js.iter().map(|&p| v.px(p)).collect();
            let mut pb = PathBuilder::new();
            pb.move_to(px[0].x as f32, px[0].y as f32);
            for p in &px[1..] {
                pb.line_to(p.x as f32, p.y as f32);
            }
            if let Some(path) = pb.finish() {
                pm.stroke_path(&path, &paint(JOINT), &stroke(JOINT_PX), id, None);
            }
            for a in &px[1..3] {
                if let Some(path) = PathBuilder::from_circle(a.x as f32, a.y as f32, jdot as f32) {
                    pm.fill_path(&path, &paint(JOINT), FillRule::Winding, id, None);
                }
            }
        }
        let (dot, len) = (v.marker_px(CONTACT_DOT), v.marker_px(CONTACT_NORMAL));
        let mut red = paint(CONTACT);
        red.set_color_rgba8(CONTACT.0, CONTACT.1, CONTACT.2, CONTACT_ALPHA);
        let thin = stroke((dot * 0.5).max(1.0));
        for &(p, n) in &self.contacts {
            let a = v.px(p);
            let b = v.px(p.add(n.scale(len / v.scale)));
            let mut pb = PathBuilder::new();
            pb.move_to(a.x as f32, a.y as f32);
            pb.line_to(b.x as f32, b.y as f32);
            if let Some(path) = pb.finish() {
                pm.stroke_path(&path, &red, &thin, id, None);
            }
            if let Some(path) = PathBuilder::from_circle(a.x as f32, a.y as f32, dot as f32) {
                pm.fill_path(&path, &red, FillRule::Winding, id, None);
            }
        }
        pm.encode_png()
            .map_err(|e| format!("PNG encoding failed: {e}"))
    }

    fn to_svg(&self) -> String {
        let v = &self.view;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#,
            w = v.width,
            h = v.height
        );
        let _ = writeln!(
            s,
            r#"<rect width="100%" height="100%" fill="{}"/>"#,
            BACKGROUND.hex()
        );
        let (mut grid, mut axes) = (String::new(), String::new());
        for (a, b, axis) in self.grid_lines() {
            let d = if axis { &mut axes } else { &mut grid };
            let _ = write!(d, "M{:.1} {:.1}L{:.1} {:.1}", a.x, a.y, b.x, b.y);
        }
        for (d, c) in [(grid, GRID), (axes, AXIS)] {
            if !d.is_empty() {
                let _ = writeln!(
                    s,
                    r#"<path d="{d}" stroke="{}" stroke-width="1" fill="none"/>"#,
                    c.hex()
                );
            }
        }
        let paint = |st: Style| {
            format!(
                r#"fill="{}" stroke="{}" stroke-width="{OUTLINE_PX}" stroke-linejoin="round""#,
                st.fill.hex(),
                st.stroke.hex()
            )
        };
        let pts_str = |pts: &[P]| {
            let mut o = String::new();
            for (i, &p) in pts.iter().enumerate() {
                let q = v.px(p);
                let _ = write!(o, "{}{:.2},{:.2}", if i == 0 { "" } else { " " }, q.x, q.y);
            }
            o
        };
        for item in &self.items {
            match item {
                Item::Outline {
                    pts,
                    kind: Kind::Polygon,
                    style,
                } => {
                    let _ = writeln!(
                        s,
                        r#"<polygon points="{}" {}/>"#,
                        pts_str(pts),
                        paint(*style)
                    );
                }
                Item::Outline {
                    pts,
                    kind: Kind::Capsule,
                    style,
                } => {
                    let _ = writeln!(s, r#"<path d="M{}Z" {}/>"#, pts_str(pts), paint(*style));
                }
                Item::Disc { c, r, axis, style } => {
                    let (pc, pa) = (v.px(*c), v.px(*axis));
                    let _ = writeln!(
                        s,
                        r#"<circle cx="{:.2}" cy="{:.2}" r="{:.2}" {}/>"#,
                        pc.x,
                        pc.y,
                        r * v.scale,
                        paint(*style)
                    );
                    let _ = writeln!(
                        s,
                        r#"<line x1="{:.2}" y1="{:.2}" x2="{:.2}" y2="{:.2}" stroke="{}" stroke-width="{OUTLINE_PX}"/>"#,
                        pc.x,
                        pc.y,
                        pa.x,
                        pa.y,
                        style.stroke.hex()
                    );
                }
                Item::Segment { a, b, color } => {
                    let (a, b) = (v.px(*a), v.px(*b));
                    let _ = writeln!(
                        s,
                        r#"<line x1="{:.2}" y1="{:.2}" x2="{:.2}" y2="{:.2}" stroke="{}" stroke-width="{SEGMENT_PX}" stroke-linecap="round"/>"#,
                        a.x,
                        a.y,
                        b.x,
                        b.y,
                        color.hex()
                    );
                }
            }
        }
        let jdot = v.marker_px(JOINT_DOT);
        let _ = writeln!(
            s,
            r#"<g class="joints" stroke="{c}" stroke-width="{JOINT_PX}" fill="none">"#,
            c = JOINT.hex()
        );
        for js in &self.joints {
            let px: Vec<P> = js.iter().map(|&p| v.px(p)).collect();
            let pts: Vec<String> = px
                .iter()
                .map(|p| format!("{:.2},{:.2}", p.x, p.y))
                .collect();
            let _ = writeln!(s, r#"<polyline points="{}"/>"#, pts.join(" "));
            for a in &px[1..3] {
                let _ = writeln!(
                    s,
                    r#"<circle cx="{:.2}" cy="{:.2}" r="{jdot:.2}" fill="{c}" stroke="none"/>"#,
                    a.x,
                    a.y,
                    c = JOINT.hex()
                );
            }
        }
        s.push_str("</g>\n");
        let (dot, len) = (v.marker_px(CONTACT_DOT), v.marker_px(CONTACT_NORMAL));
        let _ = writeln!(
            s,
            r#"<g fill="{c}" stroke="{c}" stroke-width="{:.2}" opacity="{:.2}">"#,
            (dot * 0.5).max(1.0),
            f64::from(CONTACT_ALPHA) / 255.0,
            c = CONTACT.hex()
        );
        for &(p, n) in &self.contacts {
            let a = v.px(p);
            let b = v.px(p.add(n.scale(len / v.scale)));
            let _ = writeln!(
                s,
                r#"<line x1="{:.2}" y1="{:.2}" x2="{:.2}" y2="{:.2}"/><circle cx="{:.2}" cy="{:.2}" r="{dot:.2}" stroke="none"/>"#,
                a.x, a.y, b.x, b.y, a.x, a.y
            );
        }
        s.push_str("</g>\n");
        s.push_str("</svg>\n");
        s
    }
}

fn color(c: Rgb) -> tiny_skia::Color {
    tiny_skia::Color::from_rgba8(c.0, c.1, c.2, 255)
}

/// The world rectangle to show: the moving bodies plus a margin, with static
/// shapes let in only near them (a 2 km ground must not squash a pyramid);
/// with no moving bodies, everything.
fn view_region(moving: Option<Rect>, statics: &[Rect]) -> Rect {
    let margin = |r: Rect| 0.5 + 0.05 * r.width().max(r.height());
    match moving {
        Some(m) => {
            let m = m.expand(margin(m));
            let clip = m.scale_about_center(1.5);
            let r = statics
                .iter()
                .filter_map(|s| s.intersect(clip))
                .fold(m, Rect::union);
            // A little air so walls at the clip edge are not cut in half.
            r.expand(0.02 * r.width().max(r.height()))
        }
        None => match statics.iter().copied().reduce(Rect::union) {
            Some(all) => all.expand(margin(all)),
            None => Rect {
                lo: P::new(-10.0, -10.0),
                hi: P::new(10.0, 10.0),
            },
        },
    }
}

/// One shape as a drawable item in world coordinates.
fn shape_item(g: ShapeGeometry, xf: Transform, style: Style, view: &View) -> Item {
    match g {
        ShapeGeometry::Circle(c) => {
            let center = P::of(xf.apply(c.center));
            let r = c.radius.to_f64();
            Item::Disc {
                c: center,
                r,
                axis: center.add(P::of(xf.q.x_axis()).scale(r)),
                style,
            }
        }
        ShapeGeometry::Capsule(c) => Item::Outline {
            pts: rounded_outline(
                &[P::of(xf.apply(c.c1)), P::of(xf.apply(c.c2))],
                c.radius.to_f64(),
                view.scale,
            ),
            kind: Kind::Capsule,
            style,
        },
        ShapeGeometry::Polygon(p) => {
            let verts: Vec<P> = p.points().iter().map(|&v| P::of(xf.apply(v))).collect();
            Item::Outline {
                pts: rounded_outline(&verts, p.radius.to_f64(), view.scale),
                kind: Kind::Polygon,
                style,
            }
        }
        ShapeGeometry::Segment(s)
        | ShapeGeometry::ChainSegment(bitroom_sim::geometry::ChainSegment { segment: s, .. }) => {
            Item::Segment {
                a: P::of(xf.apply(s.p1)),
                b: P::of(xf.apply(s.p2)),
                color: style.stroke,
            }
        }
    }
}

/// Angle step for arcs of radius `r_px` pixels: chord error under ¼ px.
fn arc_step(r_px: f64) -> f64 {
    if r_px <= 0.25 {
        return PI / 4.0;
    }
    (2.0 * (1.0 - 0.25 / r_px).clamp(-1.0, 1.0).acos()).clamp(PI / 90.0, PI / 4.0)
}

/// A circle as a counter-clockwise polygon.
fn disc_points(c: P, r: f64, scale: f64) -> Vec<P> {
    let n = (TAU / arc_step(r * scale)).ceil().max(8.0) as usize;
    (0..n)
        .map(|i| {
            let a = TAU * i as f64 / n as f64;
            c.add(P::new(a.cos(), a.sin()).scale(r))
        })
        .collect()
}

/// The outline of a convex polygon (or, with two points, a segment) grown
/// by `r`: corners become arcs.  Returns counter-clockwise points.
fn rounded_outline(verts: &[P], r: f64, scale: f64) -> Vec<P> {
    let mut v = verts.to_vec();
    let area2: f64 = (0..v.len())
        .map(|i| {
            let (a, b) = (v[i], v[(i + 1) % v.len()]);
            a.x * b.y - b.x * a.y
        })
        .sum();
    if area2 < 0.0 {
        v.reverse();
    }
    if r <= 0.0 || v.is_empty() {
        return v;
    }
    if v.len() == 2 && v[0].sub(v[1]).len() < 1e-12 {
        return disc_points(v[0], r, scale);
    }
    let n = v.len();
    let normal = |i: usize| {
        let d = v[(i + 1) % n].sub(v[i]);
        let l = d.len().max(1e-12);
        P::new(d.y / l, -d.x / l)
    };
    let step = arc_step(r * scale);
    let mut out = Vec::new();
    for (i, &corner) in v.iter().enumerate() {
        let n0 = normal((i + n - 1) % n);
        let n1 = normal(i);
        let a0 = n0.y.atan2(n0.x);
        let mut da = n1.y.atan2(n1.x) - a0;
        while da < 0.0 {
            da += TAU;
        }
        if da > TAU - 1e-9 {
            da = 0.0;
        }
        let k = (da / step).ceil().max(1.0) as usize;
        for j in 0..=k {
            let a = a0 + da * j as f64 / k as f64;
            out.push(corner.add(P::new(a.cos(), a.sin()).scale(r)));
        }
    }
    out
}

/// Sutherland–Hodgman clip of a convex polygon to a rectangle.
fn clip_convex(pts: &[P], r: Rect) -> Vec<P> {
    // Each edge: keep points with f(p) >= 0.
    let planes: [(P, f64); 4] = [
        (P::new(1.0, 0.0), -r.lo.x),
        (P::new(-1.0, 0.0), r.hi.x),
        (P::new(0.0, 1.0), -r.lo.y),
        (P::new(0.0, -1.0), r.hi.y),
    ];
    let mut cur = pts.to_vec();
    for (n, d) in planes {
        if cur.is_empty() {
            break;
        }
        let f = |p: P| n.x * p.x + n.y * p.y + d;
        let mut next = Vec::with_capacity(cur.len() + 2);
        for i in 0..cur.len() {
            let (a, b) = (cur[i], cur[(i + 1) % cur.len()]);
            let (fa, fb) = (f(a), f(b));
            if fa >= 0.0 {
                next.push(a);
            }
            if (fa >= 0.0) != (fb >= 0.0) {
                let t = fa / (fa - fb);
                next.push(a.add(b.sub(a).scale(t)));
            }
        }
        cur = next;
    }
    cur
}

/// Clips a segment to a rectangle (Liang–Barsky).
fn clip_segment(a: P, b: P, r: Rect) -> Option<(P, P)> {
    let d = b.sub(a);
    let (mut t0, mut t1) = (0.0_f64, 1.0_f64);
    for (p, q) in [
        (-d.x, a.x - r.lo.x),
        (d.x, r.hi.x - a.x),
        (-d.y, a.y - r.lo.y),
        (d.y, r.hi.y - a.y),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    (t0 <= t1).then(|| (a.add(d.scale(t0)), a.add(d.scale(t1))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn pyramid() -> World {
        let mut w = bitroom_sim::scene::build_named("pyramid").expect("pyramid scene");
        for _ in 0..60 {
            w.step();
        }
        w
    }

    fn temp_file(ext: &str) -> PathBuf {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        std::env::temp_dir().join(format!(
            "bitroom-render-{}-{nanos}-{n}.{ext}",
            std::process::id()
        ))
    }

    #[test]
    fn png_has_signature_and_sane_size() {
        let w = pyramid();
        let path = temp_file("png");
        render_to_file(&w, &path).expect("render png");
        let bytes = std::fs::read(&path).expect("read png");
        let _ = std::fs::remove_file(&path);
        assert!(bytes.starts_with(&[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a]));
        // IHDR: width and height, big-endian, at bytes 16..24.
        let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        assert!((400..=1600).contains(&width), "width {width}");
        assert!((400..=1600).contains(&height), "height {height}");
    }

    #[test]
    fn svg_has_one_polygon_element_per_polygon_shape() {
        let w = pyramid();
        let polygons = w
            .bodies()
            .flat_map(|b| w.body_shapes(b).unwrap())
            .filter(|&s| matches!(w.shape_geometry(s).unwrap(), ShapeGeometry::Polygon(_)))
            .count();
        assert!(polygons > 1);
        let path = temp_file("svg");
        render_to_file(&w, &path).expect("render svg");
        let text = std::fs::read_to_string(&path).expect("read svg");
        let _ = std::fs::remove_file(&path);
        assert!(text.contains("<svg"));
        assert_eq!(text.matches("<polygon").count(), polygons);
    }

    #[test]
    fn joints_are_drawn_as_one_polyline_each() {
        let mut w = bitroom_sim::scene::build_named("bridge").expect("bridge scene");
        w.step();
        let n = w.joint_count();
        assert!(n > 5, "{n} joints");
        let scene = Scene::from_world(&w);
        assert_eq!(scene.joints.len(), n);
        let svg = scene.to_svg();
        assert_eq!(svg.matches("<polyline ").count(), n);
        // A scene without joints draws none.
        assert_eq!(
            Scene::from_world(&pyramid())
                .to_svg()
                .matches("<polyline ")
                .count(),
            0
        );
        // And the PNG path draws them without failing.
        assert!(scene.to_png().is_ok());
    }

    #[test]
    fn unknown_extension_is_an_error() {
        let w = pyramid();
        let path = temp_file("jpg");
        let err = render_to_file(&w, &path).unwrap_err();
        assert!(err.contains(".png or .svg"), "{err}");
        assert!(!path.exists());
        assert!(render_to_file(&w, &temp_file("")).is_err());
    }

    #[test]
    fn view_ignores_far_static_ground() {
        let boxy = Rect {
            lo: P::new(-1.0, 0.0),
            hi: P::new(1.0, 2.0),
        };
        let ground = Rect {
            lo: P::new(-1000.0, -1.0),
            hi: P::new(1000.0, 0.0),
        };
        let r = view_region(Some(boxy), &[ground]);
        assert!(r.width() < 10.0 && r.lo.y < 0.0, "{r:?}");
        let v = View::fit(r);
        assert!(v.scale > 100.0, "scale {}", v.scale);
        // No moving bodies: everything.
        assert!(view_region(None, &[ground]).width() > 2000.0);
    }

    #[test]
    fn clipping_keeps_inside_and_cuts_outside() {
        let r = Rect {
            lo: P::new(0.0, 0.0),
            hi: P::new(1.0, 1.0),
        };
        let big = [
            P::new(-5.0, -5.0),
            P::new(5.0, -5.0),
            P::new(5.0, 5.0),
            P::new(-5.0, 5.0),
        ];
        let c = clip_convex(&big, r);
        assert_eq!(c.len(), 4);
        assert!(c
            .iter()
            .all(|p| (0.0..=1.0).contains(&p.x) && (0.0..=1.0).contains(&p.y)));
        assert!(clip_segment(P::new(2.0, 2.0), P::new(3.0, 3.0), r).is_none());
        let (a, b) = clip_segment(P::new(-1.0, 0.5), P::new(2.0, 0.5), r).unwrap();
        assert_eq!((a.x, b.x), (0.0, 1.0));
    }
}
