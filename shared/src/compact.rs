//! Compact canonical encodings of the fixed-capacity arrays in the state.
//!
//! A polygon keeps room for eight vertices and a manifold for two points,
//! but only the first `count` are used. The canonical encoding (see
//! `state.rs`) writes just those: the used prefix as a sequence (its length
//! as `u64`, then the elements), which also stands for the `count` field.
//! The unused slots are never read, so decoding leaves them at their
//! defaults. Decoding refuses a sequence longer than the capacity before it
//! reads an element: no allocation, no out-of-bounds count.

use crate::collision::{Manifold, ManifoldPoint};
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

impl<'de> Deserialize<'de> for Manifold {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Manifold, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(rename = "Manifold")]
        struct Repr {
            normal: Vec2,
            points: Prefix<ManifoldPoint, 2>,
        }
        let r = Repr::deserialize(d)?;
        Ok(Manifold {
            normal: r.normal,
            points: r.points.items,
            count: r.points.len,
        })
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
    use crate::math::fx;
    use crate::state::CONFIG;

    fn encode<T: Serialize>(v: &T) -> Vec<u8> {
        bincode::serde::encode_to_vec(v, CONFIG).expect("encodes")
    }

    fn decode<T: serde::de::DeserializeOwned>(b: &[u8]) -> Result<T, bincode::error::DecodeError> {
        bincode::serde::decode_from_slice(b, CONFIG.with_limit::<4096>()).map(|(v, _)| v)
    }

    #[test]
    fn manifolds_encode_only_their_points_and_round_trip() {
        let mut m = Manifold {
            normal: Vec2::new(fx(0), fx(1)),
            ..Manifold::default()
        };
        let empty = encode(&m);
        // normal (16) + length (8), no points.
        assert_eq!(empty.len(), 24);
        assert_eq!(decode::<Manifold>(&empty).unwrap(), m);
        for k in 0..2 {
            m.points[k] = ManifoldPoint {
                point: Vec2::new(fx(k as i32), fx(2)),
                separation: Scalar::milli(-3),
                normal_impulse: fx(7),
                id: 0x0102 + k as u16,
                persisted: true,
                ..ManifoldPoint::default()
            };
            m.count = k as u8 + 1;
            let b = encode(&m);
            assert_eq!(b.len(), 24 + (k + 1) * encode(&m.points[0]).len());
            assert_eq!(decode::<Manifold>(&b).unwrap(), m);
        }
    }

    #[test]
    fn a_manifold_with_three_points_is_refused_before_reading_them() {
        let m = Manifold::default();
        let mut b = encode(&m);
        // Claim 3 points, then an absurd count: both refused, no allocation.
        for claim in [3u64, u64::MAX] {
            b[16..24].copy_from_slice(&claim.to_le_bytes());
            assert!(decode::<Manifold>(&b).is_err(), "{claim} points accepted");
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
