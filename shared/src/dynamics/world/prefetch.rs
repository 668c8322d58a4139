//! Warming a world's memory before a step that finds it cold.
//!
//! A server ticks each room once a frame, after the other rooms' ticks and
//! the network's work, so a room's state is out of the core's caches when
//! its tick begins, and the step fetches it a line at a time as its loops
//! reach each body, shape and contact in turn (about 4,600 lines a tick
//! of the default arena: `tools/room-counts.sh`). Asked for all at once
//! before the step, the lines load side by side instead of one after
//! another.

use super::World;
use crate::geometry::ShapeGeometry;
use crate::math::prefetch;

impl World {
    /// Asks the CPU to start loading the state a step reads: bodies, their
    /// settings, shapes and geometry, contacts, joints, the broad-phase
    /// trees and the recycler's caches. Changes nothing (no bits either: it
    /// only reads, and on targets without a prefetch instruction it does
    /// nothing). Worth it where the world's memory is cold, as a server's
    /// rooms are at the start of each tick: there it took about a tenth off
    /// the tick and 8 % off the server's CPU per room (docs/fleet.md); in a
    /// loop that steps one world, where everything is cached, it cost
    /// 11,800 instructions, 0.6 % of the default arena's tick (counted
    /// before 2597c38 added a place per body, body setting, shape and
    /// polygon, and two to the recycler's lists; not counted since).
    ///
    /// Each element is asked for at places no more than a line apart, from
    /// its start to its last line, so that every line of each list is
    /// asked for (`prefetch_covers_every_line` checks the places against
    /// the types' layouts).
    pub fn prefetch_state(&self) {
        let st = &self.state;
        for b in &st.bodies {
            prefetch(&b.transform);
            prefetch(&b.linear_velocity);
            prefetch(&b.sleep_time);
            prefetch(&b.first_shape);
        }
        for c in st.body_config.iter() {
            prefetch(&c.local_center);
            prefetch(&c.inv_mass);
            prefetch(&c.sleep_threshold);
            prefetch(&c.enable_sleep);
        }
        for s in &st.shapes {
            prefetch(&s.fat_aabb);
            prefetch(&s.def);
            prefetch(&s.next);
            prefetch(&s.alive);
        }
        for g in st.geometry.iter() {
            prefetch(g);
            if let ShapeGeometry::Polygon(p) = g {
                p.prefetch();
            }
        }
        for c in &st.contacts {
            prefetch(&c.friction);
            prefetch(&c.manifold.points[1]);
            prefetch(&c.body_a);
        }
        // Few in the scenes that have any: the first line of each.
        for j in &st.joints {
            prefetch(j);
        }
        st.dynamic_tree.prefetch();
        st.static_tree.prefetch();
        self.scratch.recycler.prefetch();
    }
}

#[cfg(test)]
mod tests {
    use crate::dynamics::body::{Body, BodyConfig};
    use crate::dynamics::contact::Contact;
    use crate::dynamics::shape::Shape;
    use crate::geometry::{Polygon, ShapeGeometry, MAX_POLYGON_VERTICES};
    use crate::math::{covers_lines, Scalar};
    use core::mem::{align_of, offset_of, size_of};

    fn check<T>(name: &str, offsets: &[usize]) {
        assert!(
            covers_lines(size_of::<T>(), align_of::<T>(), offsets),
            "{name}: {} bytes aligned to {}, asked at {offsets:?}: a line is \
             left out (the layout changed: ask for other fields in prefetch_state)",
            size_of::<T>(),
            align_of::<T>()
        );
    }

    /// The places `World::prefetch_state` asks for cover every line of
    /// each list, as the compiler lays the types out.
    #[test]
    fn prefetch_covers_every_line() {
        check::<Body>(
            "Body",
            &[
                offset_of!(Body, transform),
                offset_of!(Body, linear_velocity),
                offset_of!(Body, sleep_time),
                offset_of!(Body, first_shape),
            ],
        );
        check::<BodyConfig>(
            "BodyConfig",
            &[
                offset_of!(BodyConfig, local_center),
                offset_of!(BodyConfig, inv_mass),
                offset_of!(BodyConfig, sleep_threshold),
                offset_of!(BodyConfig, enable_sleep),
            ],
        );
        check::<Shape>(
            "Shape",
            &[
                offset_of!(Shape, fat_aabb),
                offset_of!(Shape, def),
                offset_of!(Shape, next),
                offset_of!(Shape, alive),
            ],
        );
        // The list holds `ShapeGeometry`s: its tag (asked for with the
        // element's start) and, for a polygon, the polygon's fields where
        // the enum puts them (found from the addresses of one).
        let g = ShapeGeometry::Polygon(Polygon::make_box(Scalar::ONE, Scalar::ONE));
        let ShapeGeometry::Polygon(inner) = &g else {
            unreachable!("a polygon was made");
        };
        let at = (inner as *const Polygon as usize) - (&g as *const ShapeGeometry as usize);
        let vertex = size_of::<crate::math::Vec2>();
        let (v, n) = (offset_of!(Polygon, vertices), offset_of!(Polygon, normals));
        check::<ShapeGeometry>(
            "ShapeGeometry::Polygon",
            &[
                0,
                at + v,
                at + v + 4 * vertex,
                at + n,
                at + n + 4 * vertex,
                at + offset_of!(Polygon, centroid),
                at + offset_of!(Polygon, count),
            ],
        );
        assert_eq!(MAX_POLYGON_VERTICES, 8);
        let (m, p) = (
            offset_of!(Contact, manifold),
            size_of::<crate::collision::ManifoldPoint>(),
        );
        check::<Contact>(
            "Contact",
            &[
                offset_of!(Contact, friction),
                m + offset_of!(crate::collision::Manifold, points) + p,
                offset_of!(Contact, body_a),
            ],
        );
    }

    /// A line left out is found: the check is not vacuous.
    #[test]
    fn a_line_left_out_is_found() {
        assert!(!covers_lines(120, 8, &[0, 96]));
        // Started 24 bytes into a line, bytes 104 to 119 are a line of
        // their own.
        assert!(!covers_lines(120, 8, &[0, 48, 96]));
        assert!(covers_lines(120, 8, &[0, 56, 112]));
        assert!(!covers_lines(100, 1, &[0, 50]));
        assert!(!covers_lines(192, 64, &[0, 150]));
        assert!(covers_lines(192, 64, &[0, 96, 176]));
    }
}
