//! The ragdoll "human" of the Box2D v3 benchmark set (its `human.c`), at
//! scale 1: eleven capsule bones joined by limited, sprung, motor-braked
//! revolute joints. Used by the `rain` and `ragdoll` scenes.
//!
//! The bone table follows `docs/benchmark-scenes.md` (section 7).

use crate::dynamics::{
    BodyDef, BodyId, BodyKind, JointDef, JointKind, RevoluteJoint, ShapeDef, World,
};
use crate::geometry::{Capsule, Filter, Polygon, ShapeGeometry};
use crate::math::trig::PI_Q62;
use crate::math::{Scalar, Vec2};

/// `m / 1000` rounded to the nearest 2⁻³² (the value a decimal literal
/// with three places gets when parsed). Integer arithmetic only: the bone
/// table is used while stepping (`rain_step` spawns humans), so no `f64`.
const fn d(m: i64) -> Scalar {
    let num = (m as i128) << 32;
    let half = if num < 0 { -500 } else { 500 };
    Scalar::from_bits(((num + half) / 1000) as i64)
}

/// `m / 1000 · π` rounded to the nearest 2⁻³², from π in Q2.62.
const fn d_pi(m: i64) -> Scalar {
    let num = m as i128 * PI_Q62 as i128;
    let den = 1000i128 << 30;
    let half = if num < 0 { -den / 2 } else { den / 2 };
    Scalar::from_bits(((num + half) / den) as i64)
}

/// One bone: body height above the spawn point, capsule centres (local y)
/// and radius, linear damping, parent bone, joint pivot height, angle limits,
/// maximum torque of the joint's braking motor.
struct Bone {
    y: Scalar,
    capsule: (Scalar, Scalar, Scalar),
    damping: Scalar,
    parent: Option<usize>,
    pivot: Scalar,
    limit: (Scalar, Scalar),
    max_motor_torque: Scalar,
    /// Lower legs carry a foot.
    foot: bool,
    /// Lower arms: the joint frame on the parent is rotated by +π/4.
    forearm: bool,
}

/// A bone from the table's decimals, in thousandths: heights, capsule
/// centres and radius, damping, pivot; angle limits in thousandths of π;
/// the motor's friction scale in thousandths (times 0.05 N·m).
const fn bone(
    y: i64,
    capsule: (i64, i64, i64),
    damping: i64,
    parent: Option<usize>,
    pivot: i64,
    limit: (i64, i64),
    friction_scale: i64,
) -> Bone {
    Bone {
        y: d(y),
        capsule: (d(capsule.0), d(capsule.1), d(capsule.2)),
        damping: d(damping),
        parent,
        pivot: d(pivot),
        limit: (d_pi(limit.0), d_pi(limit.1)),
        // friction_scale / 1000 · 0.05 = friction_scale · 50 / 10⁶.
        max_motor_torque: Scalar::from_bits(
            ((((friction_scale as i128 * 50) << 32) + 500_000) / 1_000_000) as i64,
        ),
        foot: false,
        forearm: false,
    }
}

const HIP: Bone = bone(950, (-20, 20, 95), 0, None, 0, (0, 0), 0);
const TORSO: Bone = bone(1200, (-135, 135, 90), 0, Some(0), 1000, (-250, 0), 500);
const HEAD: Bone = bone(1475, (-38, 39, 75), 100, Some(1), 1400, (-300, 100), 250);
const UPPER_LEG: Bone = bone(775, (-125, 125, 60), 0, Some(0), 900, (-50, 400), 1000);
const UPPER_ARM: Bone = bone(1225, (-125, 125, 35), 0, Some(1), 1350, (-100, 800), 500);

/// Bones in creation order (hip, torso, head, left leg, right leg, left
/// arm, right arm); `parent` indexes this table.
const BONES: [Bone; 11] = [
    HIP,
    TORSO,
    HEAD,
    UPPER_LEG,
    Bone {
        foot: true,
        ..bone(475, (-155, 125, 45), 0, Some(3), 625, (-500, -20), 500)
    },
    UPPER_LEG,
    Bone {
        foot: true,
        ..bone(475, (-155, 125, 45), 0, Some(5), 625, (-500, -20), 500)
    },
    UPPER_ARM,
    Bone {
        forearm: true,
        ..bone(975, (-125, 125, 30), 100, Some(7), 1100, (-200, 300), 100)
    },
    UPPER_ARM,
    Bone {
        forearm: true,
        ..bone(975, (-125, 125, 30), 100, Some(9), 1100, (-200, 300), 100)
    },
];

/// Number of bodies (and bones) in a human.
pub const HUMAN_BONES: usize = BONES.len();

/// Adds a human whose feet stand at `spawn`, in collision group `group`
/// (bones of one human never collide with each other, nor with other humans
/// in the same negative group). Every bone gets `user_data`. Returns the
/// bodies in bone order; the ten joints are created right after their child
/// bone, parent as body A.
pub fn add_human(world: &mut World, spawn: Vec2, group: i32, user_data: u64) -> [BodyId; 11] {
    let bone_filter = Filter {
        category: 0x2,
        mask: 0x3,
        group,
    };
    let bone_shape = ShapeDef {
        friction: d(200),
        filter: bone_filter,
        user_data,
        ..ShapeDef::default()
    };
    let foot_shape = ShapeDef {
        friction: d(50),
        filter: Filter {
            category: 0x2,
            mask: 0x1,
            group,
        },
        user_data,
        ..ShapeDef::default()
    };
    let foot = Polygon::new(
        &[
            Vec2::new(d(-30), d(-185)),
            Vec2::new(d(110), d(-185)),
            Vec2::new(d(110), d(-160)),
            Vec2::new(d(-30), d(-140)),
        ],
        d(15),
    )
    .expect("foot polygon is convex");
    let mut ids = [BodyId {
        index: 0,
        generation: 0,
    }; 11];
    for (k, b) in BONES.iter().enumerate() {
        let position = spawn + Vec2::new(Scalar::ZERO, b.y);
        let id = world
            .create_body(&BodyDef {
                kind: BodyKind::Dynamic,
                position,
                linear_damping: b.damping,
                sleep_threshold: d(100),
                user_data,
                ..BodyDef::default()
            })
            .expect("human bone in bounds");
        let (c1, c2, r) = b.capsule;
        let capsule = Capsule::new(Vec2::new(Scalar::ZERO, c1), Vec2::new(Scalar::ZERO, c2), r)
            .expect("bone capsule");
        world
            .create_shape(id, &bone_shape, ShapeGeometry::Capsule(capsule))
            .expect("bone shape");
        if b.foot {
            world
                .create_shape(id, &foot_shape, ShapeGeometry::Polygon(foot))
                .expect("foot shape");
        }
        ids[k] = id;
        if let Some(parent) = b.parent {
            let pivot = spawn + Vec2::new(Scalar::ZERO, b.pivot);
            let parent_pos = spawn + Vec2::new(Scalar::ZERO, BONES[parent].y);
            let joint = RevoluteJoint {
                enable_limit: true,
                lower_angle: b.limit.0,
                upper_angle: b.limit.1,
                enable_spring: true,
                hertz: Scalar::from_int(5),
                damping_ratio: Scalar::HALF,
                target_angle: Scalar::ZERO,
                enable_motor: true,
                motor_speed: Scalar::ZERO,
                max_motor_torque: b.max_motor_torque,
            };
            world
                .create_joint(&JointDef {
                    local_anchor_a: pivot - parent_pos,
                    local_anchor_b: pivot - position,
                    reference_angle: if b.forearm { d_pi(250) } else { Scalar::ZERO },
                    user_data,
                    ..JointDef::new(ids[parent], id, JointKind::Revolute(joint))
                })
                .expect("human joint");
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousandths_round_like_decimal_literals() {
        // `d(m)` must give the bits the decimal "m/1000" parses to.
        for m in -3000i64..=3000 {
            let text = format!(
                "{}{}.{:03}",
                if m < 0 { "-" } else { "" },
                m.abs() / 1000,
                m.abs() % 1000
            );
            let want = Scalar::parse_decimal(&text).expect("decimal");
            assert_eq!(d(m), want, "{text}");
        }
    }

    #[test]
    fn multiples_of_pi_are_rounded_to_nearest() {
        // Test-only float reference: |d_pi(m) − m/1000·π| ≤ half an ulp
        // (plus the reference's own error).
        for m in [
            -500, -300, -250, -200, -100, -50, -20, 0, 100, 250, 300, 400, 800,
        ] {
            let exact = m as f64 / 1000.0 * core::f64::consts::PI;
            let got = d_pi(m).to_bits() as f64 / 4_294_967_296.0;
            assert!((got - exact).abs() <= 0.5 / 4_294_967_296.0 + 1e-15, "{m}");
        }
    }
}
