//! The ragdoll "human" of the Box2D v3 benchmark set (its `human.c`), at
//! scale 1: eleven capsule bones joined by limited, sprung, motor-braked
//! revolute joints. Used by the `rain` and `ragdoll` scenes.
//!
//! The bone table follows `docs/benchmark-scenes.md` (section 7).

use crate::dynamics::{
    BodyDef, BodyId, BodyKind, JointDef, JointKind, RevoluteJoint, ShapeDef, World,
};
use crate::geometry::{Capsule, Filter, Polygon, ShapeGeometry};
use crate::math::{Scalar, Vec2};

fn s(v: f64) -> Scalar {
    // Float edge: scene constants written as decimals, converted once at
    // build time (IEEE → fixed rounding is identical on every target).
    // Also reached from `rain_step` while stepping (see `joint_scenes::s`).
    Scalar::from_f64(v).expect("scene constant in range")
}

/// One bone: body height above the spawn point, capsule centres (local y)
/// and radius, linear damping, parent bone, joint pivot height, angle limits
/// (multiples of π), friction scale of the joint's braking motor.
struct Bone {
    y: f64,
    capsule: (f64, f64, f64),
    damping: f64,
    parent: Option<usize>,
    pivot: f64,
    limit: (f64, f64),
    friction_scale: f64,
    /// Lower legs carry a foot.
    foot: bool,
    /// Lower arms: the joint frame on the parent is rotated by +π/4.
    forearm: bool,
}

const fn bone(
    y: f64,
    capsule: (f64, f64, f64),
    damping: f64,
    parent: Option<usize>,
    pivot: f64,
    limit: (f64, f64),
    friction_scale: f64,
) -> Bone {
    Bone {
        y,
        capsule,
        damping,
        parent,
        pivot,
        limit,
        friction_scale,
        foot: false,
        forearm: false,
    }
}

const HIP: Bone = bone(0.95, (-0.02, 0.02, 0.095), 0.0, None, 0.0, (0.0, 0.0), 0.0);
const TORSO: Bone = bone(
    1.2,
    (-0.135, 0.135, 0.09),
    0.0,
    Some(0),
    1.0,
    (-0.25, 0.0),
    0.5,
);
const HEAD: Bone = bone(
    1.475,
    (-0.038, 0.039, 0.075),
    0.1,
    Some(1),
    1.4,
    (-0.3, 0.1),
    0.25,
);
const UPPER_LEG: Bone = bone(
    0.775,
    (-0.125, 0.125, 0.06),
    0.0,
    Some(0),
    0.9,
    (-0.05, 0.4),
    1.0,
);
const UPPER_ARM: Bone = bone(
    1.225,
    (-0.125, 0.125, 0.035),
    0.0,
    Some(1),
    1.35,
    (-0.1, 0.8),
    0.5,
);

/// Bones in creation order (hip, torso, head, left leg, right leg, left
/// arm, right arm); `parent` indexes this table.
const BONES: [Bone; 11] = [
    HIP,
    TORSO,
    HEAD,
    UPPER_LEG,
    Bone {
        foot: true,
        ..bone(
            0.475,
            (-0.155, 0.125, 0.045),
            0.0,
            Some(3),
            0.625,
            (-0.5, -0.02),
            0.5,
        )
    },
    UPPER_LEG,
    Bone {
        foot: true,
        ..bone(
            0.475,
            (-0.155, 0.125, 0.045),
            0.0,
            Some(5),
            0.625,
            (-0.5, -0.02),
            0.5,
        )
    },
    UPPER_ARM,
    Bone {
        forearm: true,
        ..bone(
            0.975,
            (-0.125, 0.125, 0.03),
            0.1,
            Some(7),
            1.1,
            (-0.2, 0.3),
            0.1,
        )
    },
    UPPER_ARM,
    Bone {
        forearm: true,
        ..bone(
            0.975,
            (-0.125, 0.125, 0.03),
            0.1,
            Some(9),
            1.1,
            (-0.2, 0.3),
            0.1,
        )
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
    let pi = core::f64::consts::PI;
    let bone_filter = Filter {
        category: 0x2,
        mask: 0x3,
        group,
    };
    let bone_shape = ShapeDef {
        friction: s(0.2),
        filter: bone_filter,
        user_data,
        ..ShapeDef::default()
    };
    let foot_shape = ShapeDef {
        friction: s(0.05),
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
            Vec2::new(s(-0.03), s(-0.185)),
            Vec2::new(s(0.11), s(-0.185)),
            Vec2::new(s(0.11), s(-0.16)),
            Vec2::new(s(-0.03), s(-0.14)),
        ],
        s(0.015),
    )
    .expect("foot polygon is convex");
    let mut ids = [BodyId {
        index: 0,
        generation: 0,
    }; 11];
    for (k, b) in BONES.iter().enumerate() {
        let position = spawn + Vec2::new(Scalar::ZERO, s(b.y));
        let id = world
            .create_body(&BodyDef {
                kind: BodyKind::Dynamic,
                position,
                linear_damping: s(b.damping),
                sleep_threshold: s(0.1),
                user_data,
                ..BodyDef::default()
            })
            .expect("human bone in bounds");
        let (c1, c2, r) = b.capsule;
        let capsule = Capsule::new(
            Vec2::new(Scalar::ZERO, s(c1)),
            Vec2::new(Scalar::ZERO, s(c2)),
            s(r),
        )
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
            let pivot = spawn + Vec2::new(Scalar::ZERO, s(b.pivot));
            let parent_pos = spawn + Vec2::new(Scalar::ZERO, s(BONES[parent].y));
            let joint = RevoluteJoint {
                enable_limit: true,
                lower_angle: s(b.limit.0 * pi),
                upper_angle: s(b.limit.1 * pi),
                enable_spring: true,
                hertz: Scalar::from_int(5),
                damping_ratio: Scalar::HALF,
                target_angle: Scalar::ZERO,
                enable_motor: true,
                motor_speed: Scalar::ZERO,
                max_motor_torque: s(b.friction_scale * 0.05),
            };
            world
                .create_joint(&JointDef {
                    local_anchor_a: pivot - parent_pos,
                    local_anchor_b: pivot - position,
                    reference_angle: if b.forearm {
                        s(0.25 * pi)
                    } else {
                        Scalar::ZERO
                    },
                    user_data,
                    ..JointDef::new(ids[parent], id, JointKind::Revolute(joint))
                })
                .expect("human joint");
        }
    }
    ids
}
