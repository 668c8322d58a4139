//! Compact canonical encodings of the fixed-capacity arrays in the state.
//!
//! A polygon keeps room for eight vertices and a manifold for two points,
//! but only the first `count` are used. The canonical encoding (see
//! `canonical`) writes just those: the used prefix as a sequence (its length
//! as `u64`, then the elements), which also stands for the `count` field.
//! A contact's manifold is written in its state form ([`manifold_state`]:
//! ids and impulses, no geometry); `Manifold`'s own `Serialize` (normal and
//! full points) is for reports such as contact events.
//! The unused slots are never read, so decoding leaves them at their
//! defaults. Decoding refuses a sequence longer than the capacity before it
//! reads an element: no allocation, no out-of-bounds count.

use crate::collision::Manifold;
use crate::geometry::{Polygon, MAX_POLYGON_VERTICES};
use crate::math::{Scalar, Vec2};
use core::fmt;
use core::marker::PhantomData;
use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// The used prefix of an array of capacity `N`, decoded in place.
struct Prefix<T, const N: usize> {
    items: [T; N],
    len: u8,
}

impl<'de, T: Deserialize<'de> + Default + Copy, const N: usize> Deserialize<'de> for Prefix<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, const N: usize>(PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Default + Copy, const N: usize> Visitor<'de> for V<T, N> {
            type Value = Prefix<T, N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "at most {N} elements")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Prefix<T, N>, A::Error> {
                if let Some(n) = seq.size_hint().filter(|&n| n > N) {
                    return Err(de::Error::invalid_length(n, &self));
                }
                let mut p = Prefix {
                    items: [T::default(); N],
                    len: 0,
                };
                while let Some(x) = seq.next_element()? {
                    let slot = p.items.get_mut(p.len as usize);
                    let slot = slot.ok_or_else(|| de::Error::invalid_length(N + 1, &self))?;
                    *slot = x;
                    p.len += 1;
                }
                Ok(p)
            }
        }
        d.deserialize_seq(V::<T, N>(PhantomData))
    }
}

impl Serialize for Manifold {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Manifold", 2)?;
        st.serialize_field("normal", &self.normal)?;
        st.serialize_field("points", self.points())?;
        st.end()
    }
}

/// A contact's manifold as state: per point only what the positions do
/// not determine (the feature id, the warm-start impulses and whether the
/// point persisted), as a sequence of at most two.
///
/// The geometry (normal, points, separations) is left out: a step ends by
/// colliding every contact of a body that moved, so a manifold is always
/// the one its shapes give at their current transforms (recycled, or the
/// narrow phase's, as the contact's `direct` flag says), and the decoder
/// recomputes it from them (`snapshot`, which also checks that the
/// recomputed points carry the stored feature ids). A decoded manifold
/// holds zero geometry until then.
pub(crate) mod manifold_state {
    use super::Prefix;
    use crate::collision::{Manifold, ManifoldPoint};
    use crate::math::Scalar;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Clone, Copy, Default, Serialize, Deserialize)]
    #[serde(rename = "ContactPoint")]
    struct PointState {
        id: u16,
        normal_impulse: Scalar,
        tangent_impulse: Scalar,
        persisted: bool,
    }

    pub(crate) fn serialize<S: Serializer>(m: &Manifold, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.points().iter().map(|p| PointState {
            id: p.id,
            normal_impulse: p.normal_impulse,
            tangent_impulse: p.tangent_impulse,
            persisted: p.persisted,
        }))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Manifold, D::Error> {
        let p = Prefix::<PointState, 2>::deserialize(d)?;
        let mut m = Manifold {
            count: p.len,
            ..Manifold::default()
        };
        for (out, st) in m.points.iter_mut().zip(&p.items[..usize::from(p.len)]) {
            *out = ManifoldPoint {
                id: st.id,
                normal_impulse: st.normal_impulse,
                tangent_impulse: st.tangent_impulse,
                persisted: st.persisted,
                ..ManifoldPoint::default()
            };
        }
        Ok(m)
    }
}

impl Serialize for Polygon {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = usize::from(self.count).min(MAX_POLYGON_VERTICES);
        let mut st = s.serialize_struct("Polygon", 4)?;
        st.serialize_field("vertices", &self.vertices[..n])?;
        st.serialize_field("normals", &self.normals[..n])?;
        st.serialize_field("centroid", &self.centroid)?;
        st.serialize_field("radius", &self.radius)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for Polygon {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Polygon, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(rename = "Polygon")]
        struct Repr {
            vertices: Prefix<Vec2, MAX_POLYGON_VERTICES>,
            normals: Prefix<Vec2, MAX_POLYGON_VERTICES>,
            centroid: Vec2,
            radius: Scalar,
        }
        let r = Repr::deserialize(d)?;
        if r.vertices.len != r.normals.len {
            return Err(de::Error::custom("polygon has as many normals as vertices"));
        }
        Ok(Polygon {
            vertices: r.vertices.items,
            normals: r.normals.items,
            centroid: r.centroid,
            radius: r.radius,
            count: r.vertices.len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::ManifoldPoint;
    use crate::encoding::canonical::CONFIG;
    use crate::math::fx;

    fn encode<T: Serialize>(v: &T) -> Vec<u8> {
        bincode::serde::encode_to_vec(v, CONFIG).expect("encodes")
    }

    fn decode<T: serde::de::DeserializeOwned>(b: &[u8]) -> Result<T, bincode::error::DecodeError> {
        bincode::serde::decode_from_slice(b, CONFIG.with_limit::<4096>()).map(|(v, _)| v)
    }

    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct InState(#[serde(with = "manifold_state")] Manifold);

    #[test]
    fn manifold_state_keeps_ids_and_impulses_and_drops_the_geometry() {
        let mut m = Manifold {
            normal: Vec2::new(fx(0), fx(1)),
            ..Manifold::default()
        };
        let empty = encode(&InState(m));
        // The length (8), no points, no normal.
        assert_eq!(empty.len(), 8);
        assert_eq!(decode::<InState>(&empty).unwrap().0.count, 0);
        for k in 0..2 {
            m.points[k] = ManifoldPoint {
                point: Vec2::new(fx(k as i32), fx(2)),
                separation: Scalar::milli(-3),
                normal_impulse: fx(7),
                tangent_impulse: fx(-2),
                id: 0x0102 + k as u16,
                persisted: true,
                shift: Vec2::ZERO,
            };
            m.count = k as u8 + 1;
            let b = encode(&InState(m));
            // Per point: id 2 + impulses 16 + persisted 1.
            assert_eq!(b.len(), 8 + (k + 1) * 19);
            let back = decode::<InState>(&b).unwrap().0;
            assert_eq!(back.count, m.count);
            for (p, q) in back.points().iter().zip(m.points()) {
                assert_eq!(
                    (p.id, p.normal_impulse, p.tangent_impulse, p.persisted),
                    (q.id, q.normal_impulse, q.tangent_impulse, q.persisted)
                );
                assert_eq!((p.point, p.separation), (Vec2::ZERO, Scalar::ZERO));
            }
        }
    }

    #[test]
    fn a_manifold_with_three_points_is_refused_before_reading_them() {
        let mut b = encode(&InState(Manifold::default()));
        // Claim 3 points, then an absurd count: both refused, no allocation.
        for claim in [3u64, u64::MAX] {
            b[0..8].copy_from_slice(&claim.to_le_bytes());
            assert!(decode::<InState>(&b).is_err(), "{claim} points accepted");
        }
    }

    #[test]
    fn polygons_encode_only_their_vertices_and_round_trip() {
        let p = Polygon::make_box(fx(1), Scalar::HALF);
        let b = encode(&p);
        // 2 × (length + 4 × 16) + centroid 16 + radius 8.
        assert_eq!(b.len(), 2 * (8 + 64) + 24);
        assert_eq!(decode::<Polygon>(&b).unwrap(), p);
        // Vertex and normal counts must agree; at most eight.
        let mut bad = b.clone();
        bad[0] = 3;
        assert!(decode::<Polygon>(&bad).is_err());
        let mut big = b;
        big[0] = 9;
        assert!(decode::<Polygon>(&big).is_err());
    }
}
