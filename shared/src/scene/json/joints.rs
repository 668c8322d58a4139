//! Joints in scenes: their records and how they are checked and created
//! (after every body, in array order).

use super::*;

// Joints.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JointKindJson {
    Revolute,
    Prismatic,
    Weld,
    Wheel,
    Distance,
    Pulley,
    Angle,
    Motor,
    Target,
    Friction,
}

pub(super) const JOINT_KINDS: [(JointKindJson, &str); 10] = [
    (JointKindJson::Revolute, "revolute"),
    (JointKindJson::Prismatic, "prismatic"),
    (JointKindJson::Weld, "weld"),
    (JointKindJson::Wheel, "wheel"),
    (JointKindJson::Distance, "distance"),
    (JointKindJson::Pulley, "pulley"),
    (JointKindJson::Angle, "angle"),
    (JointKindJson::Motor, "motor"),
    (JointKindJson::Target, "target"),
    (JointKindJson::Friction, "friction"),
];

impl<'de> Deserialize<'de> for JointKindJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JointKindJson, D::Error> {
        const NAMES: [&str; 10] = [
            "revolute",
            "prismatic",
            "weld",
            "wheel",
            "distance",
            "pulley",
            "angle",
            "motor",
            "target",
            "friction",
        ];
        Ok(JOINT_KINDS[one_of(d, &NAMES)?].0)
    }
}

impl JointKindJson {
    pub(super) fn name(self) -> &'static str {
        JOINT_KINDS
            .iter()
            .find(|k| k.0 == self)
            .map_or("joint", |k| k.1)
    }

    /// Type-specific fields allowed, and of which required.
    pub(super) fn fields(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            JointKindJson::Revolute => (
                &[
                    "enable_limit",
                    "lower_angle",
                    "upper_angle",
                    "enable_motor",
                    "motor_speed",
                    "max_motor_torque",
                    "enable_spring",
                    "hertz",
                    "damping_ratio",
                    "target_angle",
                ],
                &[],
            ),
            JointKindJson::Prismatic => (
                &[
                    "axis",
                    "enable_limit",
                    "lower_translation",
                    "upper_translation",
                    "enable_motor",
                    "motor_speed",
                    "max_motor_force",
                    "enable_spring",
                    "hertz",
                    "damping_ratio",
                    "target_translation",
                ],
                &[],
            ),
            JointKindJson::Weld => (
                &[
                    "linear_hertz",
                    "linear_damping_ratio",
                    "angular_hertz",
                    "angular_damping_ratio",
                ],
                &[],
            ),
            JointKindJson::Wheel => (
                &[
                    "axis",
                    "enable_spring",
                    "hertz",
                    "damping_ratio",
                    "enable_limit",
                    "lower_translation",
                    "upper_translation",
                    "enable_motor",
                    "motor_speed",
                    "max_motor_torque",
                ],
                &[],
            ),
            JointKindJson::Distance => (
                &[
                    "length",
                    "enable_spring",
                    "hertz",
                    "damping_ratio",
                    "enable_limit",
                    "min_length",
                    "max_length",
                    "enable_motor",
                    "motor_speed",
                    "max_motor_force",
                ],
                &[],
            ),
            JointKindJson::Pulley => (
                &["ground_anchor_a", "ground_anchor_b", "ratio", "length"],
                &["ground_anchor_a", "ground_anchor_b"],
            ),
            JointKindJson::Angle => (
                &[
                    "target_angle",
                    "hertz",
                    "damping_ratio",
                    "max_torque",
                    "enable_limit",
                    "lower_angle",
                    "upper_angle",
                ],
                &[],
            ),
            JointKindJson::Motor => (&["max_force", "max_torque", "correction_factor"], &[]),
            JointKindJson::Target => (
                &["target", "hertz", "damping_ratio", "max_force"],
                &["target"],
            ),
            JointKindJson::Friction => (&["max_force", "max_torque"], &[]),
        }
    }
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields, expecting = "a joint object")]
pub(super) struct JointJson {
    pub(super) id: Option<String>,
    #[serde(rename = "type")]
    pub(super) kind: JointKindJson,
    pub(super) body_a: String,
    pub(super) body_b: String,
    pub(super) anchor: Option<V2>,
    pub(super) anchor_a: Option<V2>,
    pub(super) anchor_b: Option<V2>,
    pub(super) local_anchor_a: Option<V2>,
    pub(super) local_anchor_b: Option<V2>,
    pub(super) reference_angle: Option<Num>,
    pub(super) collide_connected: Option<bool>,
    pub(super) break_force: Option<Num>,
    pub(super) break_torque: Option<Num>,
    pub(super) user_data: Option<u64>,
    // Type-specific (see `JointKindJson::fields`).
    pub(super) enable_limit: Option<bool>,
    pub(super) lower_angle: Option<Num>,
    pub(super) upper_angle: Option<Num>,
    pub(super) enable_motor: Option<bool>,
    pub(super) motor_speed: Option<Num>,
    pub(super) max_motor_torque: Option<Num>,
    pub(super) max_motor_force: Option<Num>,
    pub(super) enable_spring: Option<bool>,
    pub(super) hertz: Option<Num>,
    pub(super) damping_ratio: Option<Num>,
    pub(super) target_angle: Option<Num>,
    pub(super) axis: Option<V2>,
    pub(super) lower_translation: Option<Num>,
    pub(super) upper_translation: Option<Num>,
    pub(super) target_translation: Option<Num>,
    pub(super) linear_hertz: Option<Num>,
    pub(super) linear_damping_ratio: Option<Num>,
    pub(super) angular_hertz: Option<Num>,
    pub(super) angular_damping_ratio: Option<Num>,
    pub(super) length: Option<Num>,
    pub(super) min_length: Option<Num>,
    pub(super) max_length: Option<Num>,
    pub(super) ground_anchor_a: Option<V2>,
    pub(super) ground_anchor_b: Option<V2>,
    pub(super) ratio: Option<Num>,
    pub(super) max_torque: Option<Num>,
    pub(super) max_force: Option<Num>,
    pub(super) correction_factor: Option<Num>,
    pub(super) target: Option<V2>,
}

impl JointJson {
    /// Type-specific fields that are present, by name.
    pub(super) fn present(&self) -> [(&'static str, bool); 29] {
        [
            ("enable_limit", self.enable_limit.is_some()),
            ("lower_angle", self.lower_angle.is_some()),
            ("upper_angle", self.upper_angle.is_some()),
            ("enable_motor", self.enable_motor.is_some()),
            ("motor_speed", self.motor_speed.is_some()),
            ("max_motor_torque", self.max_motor_torque.is_some()),
            ("max_motor_force", self.max_motor_force.is_some()),
            ("enable_spring", self.enable_spring.is_some()),
            ("hertz", self.hertz.is_some()),
            ("damping_ratio", self.damping_ratio.is_some()),
            ("target_angle", self.target_angle.is_some()),
            ("axis", self.axis.is_some()),
            ("lower_translation", self.lower_translation.is_some()),
            ("upper_translation", self.upper_translation.is_some()),
            ("target_translation", self.target_translation.is_some()),
            ("linear_hertz", self.linear_hertz.is_some()),
            ("linear_damping_ratio", self.linear_damping_ratio.is_some()),
            ("angular_hertz", self.angular_hertz.is_some()),
            (
                "angular_damping_ratio",
                self.angular_damping_ratio.is_some(),
            ),
            ("length", self.length.is_some()),
            ("min_length", self.min_length.is_some()),
            ("max_length", self.max_length.is_some()),
            ("ground_anchor_a", self.ground_anchor_a.is_some()),
            ("ground_anchor_b", self.ground_anchor_b.is_some()),
            ("ratio", self.ratio.is_some()),
            ("max_torque", self.max_torque.is_some()),
            ("max_force", self.max_force.is_some()),
            ("correction_factor", self.correction_factor.is_some()),
            ("target", self.target.is_some()),
        ]
    }
}

impl TopLevelItem for JointJson {
    const MAX: usize = MAX_JOINTS;
    const WHAT: &'static str = "joints";
    fn path(i: usize) -> Path {
        Path::Joint(i)
    }
}

pub(super) type JointList = BoundedList<JointJson>;

/// Largest force or torque a joint field accepts (N, N·m).
pub(super) const FORCE_BOUND: Scalar = Scalar::from_int(1_000_000_000);
/// Largest angle a joint field accepts (rad); limits are clamped to ±π.
pub(super) const ANGLE_BOUND: Scalar = Scalar::from_int(7);

pub(super) fn build_joint(
    world: &mut World,
    ids: &BTreeMap<&str, usize>,
    handles: &[BodyId],
    j: &JointJson,
    at: &Location,
) -> Result<(), SceneError> {
    let name = j.kind.name();
    let (allowed, needed) = j.kind.fields();
    let present = j.present();
    for (field, here) in present {
        if here && !allowed.contains(&field) {
            return Err(invalid(
                at,
                format!("field {field:?} does not apply to a {name} joint"),
            ));
        }
    }
    for field in needed {
        if !present.iter().any(|&(f, here)| f == *field && here) {
            return Err(invalid(
                at,
                format!("missing field {field:?} (required for a {name} joint)"),
            ));
        }
    }
    let body = |field: &str, id: &str| -> Result<BodyId, SceneError> {
        match ids.get(id) {
            Some(&i) => Ok(handles[i]),
            None => Err(invalid(
                at,
                format!("{field} {id:?} does not name a body (bodies are named by their \"id\")"),
            )),
        }
    };
    let a = body("body_a", &j.body_a)?;
    let b = body("body_b", &j.body_b)?;
    if a == b {
        return Err(invalid(
            at,
            format!("body_a and body_b are the same body {:?}", j.body_a),
        ));
    }
    // Anchors: one world point for both, a world point each, or local ones.
    let world_pt = |field: &str, v: Option<V2>| opt(v, None, |v| point(at, field, v).map(Some));
    let anchor = world_pt("anchor", j.anchor)?;
    let anchor_a = world_pt("anchor_a", j.anchor_a)?;
    let anchor_b = world_pt("anchor_b", j.anchor_b)?;
    let local_a = world_pt("local_anchor_a", j.local_anchor_a)?;
    let local_b = world_pt("local_anchor_b", j.local_anchor_b)?;
    if anchor.is_some() && (anchor_a.is_some() || anchor_b.is_some()) {
        return Err(invalid(
            at,
            "give either \"anchor\" or \"anchor_a\"/\"anchor_b\", not both",
        ));
    }
    for (world_field, local_field, w, l) in [
        ("anchor_a", "local_anchor_a", anchor.or(anchor_a), local_a),
        ("anchor_b", "local_anchor_b", anchor.or(anchor_b), local_b),
    ] {
        if w.is_some() && l.is_some() {
            return Err(invalid(
                at,
                format!("give either a world anchor ({world_field} or anchor) or {local_field:?}, not both"),
            ));
        }
    }
    let local = |id: BodyId, w: Option<Vec2>, l: Option<Vec2>| -> Result<Vec2, SceneError> {
        match (w, l) {
            (Some(p), _) => world
                .local_point(id, p)
                .map_err(|e| invalid(at, e.to_string())),
            (None, Some(l)) => Ok(l),
            (None, None) => Ok(Vec2::ZERO),
        }
    };
    let local_anchor_a = local(a, anchor.or(anchor_a), local_a)?;
    let local_anchor_b = local(b, anchor.or(anchor_b), local_b)?;

    let num = |field: &str, v: Option<Num>, lo: Scalar, hi: Scalar, default: Scalar| {
        opt(v, default, |v| ranged(at, field, v, lo, hi))
    };
    let non_neg = |field: &str, v: Option<Num>, hi: Scalar, default: Scalar| {
        num(field, v, Scalar::ZERO, hi, default)
    };
    let angle =
        |field: &str, v: Option<Num>| num(field, v, -ANGLE_BOUND, ANGLE_BOUND, Scalar::ZERO);
    let speed =
        |field: &str, v: Option<Num>| num(field, v, -TUNING_BOUND, TUNING_BOUND, Scalar::ZERO);
    let hertz = |v: Option<Num>, default: Scalar| non_neg("hertz", v, TUNING_BOUND, default);
    let damping =
        |v: Option<Num>, default: Scalar| non_neg("damping_ratio", v, TUNING_BOUND, default);
    let translation =
        |field: &str, v: Option<Num>| num(field, v, -WORLD_BOUND, WORLD_BOUND, Scalar::ZERO);
    let ordered = |lo_field: &str, lo: Scalar, hi_field: &str, hi: Scalar| {
        if lo > hi {
            Err(invalid(
                at,
                format!(
                    "{lo_field} {} is above {hi_field} {}",
                    show_scalar(lo),
                    show_scalar(hi)
                ),
            ))
        } else {
            Ok(())
        }
    };
    let axis = |default: Vec2| -> Result<Vec2, SceneError> {
        let v = opt(j.axis, default, |v| ranged_vec(at, "axis", v, WORLD_BOUND))?;
        if v.normalize() == Vec2::ZERO {
            return Err(invalid(at, "axis must not be zero"));
        }
        Ok(v)
    };

    let kind = match j.kind {
        JointKindJson::Revolute => {
            let r = RevoluteJoint {
                enable_limit: j.enable_limit.unwrap_or(false),
                lower_angle: angle("lower_angle", j.lower_angle)?,
                upper_angle: angle("upper_angle", j.upper_angle)?,
                enable_motor: j.enable_motor.unwrap_or(false),
                motor_speed: speed("motor_speed", j.motor_speed)?,
                max_motor_torque: non_neg(
                    "max_motor_torque",
                    j.max_motor_torque,
                    FORCE_BOUND,
                    Scalar::ZERO,
                )?,
                enable_spring: j.enable_spring.unwrap_or(false),
                hertz: hertz(j.hertz, Scalar::ZERO)?,
                damping_ratio: damping(j.damping_ratio, Scalar::ZERO)?,
                target_angle: angle("target_angle", j.target_angle)?,
            };
            ordered("lower_angle", r.lower_angle, "upper_angle", r.upper_angle)?;
            JointKind::Revolute(r)
        }
        JointKindJson::Prismatic => {
            let p = PrismaticJoint {
                local_axis_a: axis(PrismaticJoint::default().local_axis_a)?,
                enable_limit: j.enable_limit.unwrap_or(false),
                lower_translation: translation("lower_translation", j.lower_translation)?,
                upper_translation: translation("upper_translation", j.upper_translation)?,
                enable_motor: j.enable_motor.unwrap_or(false),
                motor_speed: speed("motor_speed", j.motor_speed)?,
                max_motor_force: non_neg(
                    "max_motor_force",
                    j.max_motor_force,
                    FORCE_BOUND,
                    Scalar::ZERO,
                )?,
                enable_spring: j.enable_spring.unwrap_or(false),
                hertz: hertz(j.hertz, Scalar::ZERO)?,
                damping_ratio: damping(j.damping_ratio, Scalar::ZERO)?,
                target_translation: translation("target_translation", j.target_translation)?,
            };
            ordered(
                "lower_translation",
                p.lower_translation,
                "upper_translation",
                p.upper_translation,
            )?;
            JointKind::Prismatic(p)
        }
        JointKindJson::Weld => JointKind::Weld(WeldJoint {
            linear_hertz: non_neg("linear_hertz", j.linear_hertz, TUNING_BOUND, Scalar::ZERO)?,
            linear_damping_ratio: non_neg(
                "linear_damping_ratio",
                j.linear_damping_ratio,
                TUNING_BOUND,
                Scalar::ZERO,
            )?,
            angular_hertz: non_neg("angular_hertz", j.angular_hertz, TUNING_BOUND, Scalar::ZERO)?,
            angular_damping_ratio: non_neg(
                "angular_damping_ratio",
                j.angular_damping_ratio,
                TUNING_BOUND,
                Scalar::ZERO,
            )?,
        }),
        JointKindJson::Wheel => {
            let d = WheelJoint::default();
            let w = WheelJoint {
                local_axis_a: axis(d.local_axis_a)?,
                enable_spring: j.enable_spring.unwrap_or(d.enable_spring),
                hertz: hertz(j.hertz, d.hertz)?,
                damping_ratio: damping(j.damping_ratio, d.damping_ratio)?,
                enable_limit: j.enable_limit.unwrap_or(false),
                lower_translation: translation("lower_translation", j.lower_translation)?,
                upper_translation: translation("upper_translation", j.upper_translation)?,
                enable_motor: j.enable_motor.unwrap_or(false),
                motor_speed: speed("motor_speed", j.motor_speed)?,
                max_motor_torque: non_neg(
                    "max_motor_torque",
                    j.max_motor_torque,
                    FORCE_BOUND,
                    Scalar::ZERO,
                )?,
            };
            ordered(
                "lower_translation",
                w.lower_translation,
                "upper_translation",
                w.upper_translation,
            )?;
            JointKind::Wheel(w)
        }
        JointKindJson::Distance => {
            let d = DistanceJoint::default();
            let length = opt(j.length, None, |v| {
                ranged(at, "length", v, Scalar::ZERO, WORLD_BOUND).map(Some)
            })?;
            let dj = DistanceJoint {
                length,
                enable_spring: j.enable_spring.unwrap_or(false),
                hertz: hertz(j.hertz, Scalar::ZERO)?,
                damping_ratio: damping(j.damping_ratio, Scalar::ZERO)?,
                enable_limit: j.enable_limit.unwrap_or(false),
                min_length: non_neg("min_length", j.min_length, WORLD_BOUND, d.min_length)?,
                max_length: non_neg("max_length", j.max_length, WORLD_BOUND, d.max_length)?,
                enable_motor: j.enable_motor.unwrap_or(false),
                motor_speed: speed("motor_speed", j.motor_speed)?,
                max_motor_force: non_neg(
                    "max_motor_force",
                    j.max_motor_force,
                    FORCE_BOUND,
                    Scalar::ZERO,
                )?,
            };
            ordered("min_length", dj.min_length, "max_length", dj.max_length)?;
            JointKind::Distance(dj)
        }
        JointKindJson::Pulley => JointKind::Pulley(PulleyJoint {
            ground_anchor_a: point(
                at,
                "ground_anchor_a",
                required(at, j.ground_anchor_a, "ground_anchor_a")?,
            )?,
            ground_anchor_b: point(
                at,
                "ground_anchor_b",
                required(at, j.ground_anchor_b, "ground_anchor_b")?,
            )?,
            ratio: opt(j.ratio, Scalar::ONE, |v| {
                positive(at, "ratio", v, TUNING_BOUND)
            })?,
            total_length: opt(j.length, None, |v| {
                ranged(at, "length", v, Scalar::ZERO, WORLD_BOUND.shl(2)).map(Some)
            })?,
        }),
        JointKindJson::Angle => {
            let d = AngleJoint::default();
            let a = AngleJoint {
                target_angle: angle("target_angle", j.target_angle)?,
                hertz: hertz(j.hertz, Scalar::ZERO)?,
                damping_ratio: damping(j.damping_ratio, Scalar::ZERO)?,
                max_torque: non_neg("max_torque", j.max_torque, FORCE_BOUND, d.max_torque)?,
                enable_limit: j.enable_limit.unwrap_or(false),
                lower_angle: angle("lower_angle", j.lower_angle)?,
                upper_angle: angle("upper_angle", j.upper_angle)?,
            };
            ordered("lower_angle", a.lower_angle, "upper_angle", a.upper_angle)?;
            JointKind::Angle(a)
        }
        JointKindJson::Motor => {
            let d = MotorJoint::default();
            JointKind::Motor(MotorJoint {
                max_force: non_neg("max_force", j.max_force, FORCE_BOUND, d.max_force)?,
                max_torque: non_neg("max_torque", j.max_torque, FORCE_BOUND, d.max_torque)?,
                correction_factor: non_neg(
                    "correction_factor",
                    j.correction_factor,
                    Scalar::ONE,
                    d.correction_factor,
                )?,
            })
        }
        JointKindJson::Target => {
            let d = TargetJoint::default();
            JointKind::Target(TargetJoint {
                target: point(at, "target", required(at, j.target, "target")?)?,
                hertz: opt(j.hertz, d.hertz, |v| positive(at, "hertz", v, TUNING_BOUND))?,
                damping_ratio: damping(j.damping_ratio, d.damping_ratio)?,
                max_force: non_neg("max_force", j.max_force, FORCE_BOUND, d.max_force)?,
            })
        }
        JointKindJson::Friction => JointKind::Friction(FrictionJoint {
            max_force: non_neg("max_force", j.max_force, FORCE_BOUND, Scalar::ZERO)?,
            max_torque: non_neg("max_torque", j.max_torque, FORCE_BOUND, Scalar::ZERO)?,
        }),
    };
    let def = JointDef {
        body_a: a,
        body_b: b,
        local_anchor_a,
        local_anchor_b,
        reference_angle: opt(j.reference_angle, Scalar::ZERO, |v| {
            ranged(at, "reference_angle", v, -ANGLE_BOUND, ANGLE_BOUND)
        })?,
        collide_connected: j.collide_connected.unwrap_or(false),
        break_force: opt(j.break_force, Scalar::MAX, |v| {
            ranged(at, "break_force", v, Scalar::ZERO, FORCE_BOUND)
        })?,
        break_torque: opt(j.break_torque, Scalar::MAX, |v| {
            ranged(at, "break_torque", v, Scalar::ZERO, FORCE_BOUND)
        })?,
        user_data: j.user_data.unwrap_or(0),
        kind,
    };
    world
        .create_joint(&def)
        .map_err(|e| invalid(at, e.to_string()))?;
    Ok(())
}
