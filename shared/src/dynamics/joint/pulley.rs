//! Pulley joint: a rope from anchor A over a fixed pulley at `ground_anchor_a`
//! and from anchor B over `ground_anchor_b`, with a block and tackle of
//! `ratio`: `length_a + ratio · length_b` stays equal to `total_length`.
//! Like Box2D's pulley it is an equality (the rope does not go slack).
//!
//! Impulse slot: `axial`.

use super::{soft_impulse, Frame, JointContext, JointImpulses, Masses, RIGID};
use crate::dynamics::solver::BodyState;
use crate::math::{Scalar, Vec2};
use serde::{Deserialize, Serialize};

/// Parameters of a pulley joint.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PulleyJoint {
    /// World point of the pulley body A hangs from.
    pub ground_anchor_a: Vec2,
    /// World point of the pulley body B hangs from.
    pub ground_anchor_b: Vec2,
    /// Block-and-tackle ratio (positive).
    pub ratio: Scalar,
    /// `length_a + ratio · length_b` (m). `None` when creating: measured
    /// from the bodies' poses (the stored joint then holds the value).
    pub total_length: Option<Scalar>,
}

impl Default for PulleyJoint {
    fn default() -> PulleyJoint {
        PulleyJoint {
            ground_anchor_a: Vec2::ZERO,
            ground_anchor_b: Vec2::ZERO,
            ratio: Scalar::ONE,
            total_length: None,
        }
    }
}

impl PulleyJoint {
    pub(super) fn validate(&self) -> Result<(), &'static str> {
        if self.ratio <= Scalar::ZERO {
            return Err("ratio must be positive");
        }
        if self.total_length.is_some_and(|l| l < Scalar::ZERO) {
            return Err("total length must not be negative");
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    ground_a: Vec2,
    ground_b: Vec2,
    /// Centres of mass at the start of the step.
    ca: Vec2,
    cb: Vec2,
    ratio: Scalar,
    total: Scalar,
    mass: Scalar,
}

pub(super) fn prepare(p: &PulleyJoint, f: &Frame, m: &Masses, ca: Vec2, cb: Vec2) -> Prepared {
    let ua = (ca + f.ra - p.ground_anchor_a).normalize();
    let ub = (cb + f.rb - p.ground_anchor_b).normalize();
    let rua = f.ra.cross(ua);
    let rub = f.rb.cross(ub);
    let ka = m.ma + m.ia * rua * rua;
    let kb = m.mb + m.ib * rub * rub;
    let k = ka + p.ratio * p.ratio * kb;
    Prepared {
        ground_a: p.ground_anchor_a,
        ground_b: p.ground_anchor_b,
        ca,
        cb,
        ratio: p.ratio,
        total: p.total_length.unwrap_or(Scalar::ZERO),
        mass: if k > Scalar::ZERO {
            Scalar::ONE / k
        } else {
            Scalar::ZERO
        },
    }
}

/// The two ropes at the current pose.
struct Ropes {
    /// Current anchors relative to the centres.
    ra: Vec2,
    rb: Vec2,
    /// Unit directions from each pulley to its anchor.
    ua: Vec2,
    ub: Vec2,
    /// Rope lengths.
    la: Scalar,
    lb: Scalar,
}

impl Ropes {
    #[inline(always)]
    fn at(f: &Frame, p: &Prepared, sa: &BodyState, sb: &BodyState) -> Ropes {
        let (ra, rb) = f.anchors(sa, sb);
        let (la, ua) = (p.ca + sa.dp + ra - p.ground_a).length_and_normalize();
        let (lb, ub) = (p.cb + sb.dp + rb - p.ground_b).length_and_normalize();
        Ropes {
            ra,
            rb,
            ua,
            ub,
            la,
            lb,
        }
    }

    /// Applies rope impulse `i` (positive pulls both anchors toward their pulleys).
    #[inline(always)]
    fn apply(&self, sa: &mut BodyState, sb: &mut BodyState, ratio: Scalar, i: Scalar) {
        let pa = self.ua * (-i);
        let pb = self.ub * (-(ratio * i));
        sa.v = sa.v.mul_add(sa.inv_mass, pa);
        sa.w += sa.inv_inertia * self.ra.cross(pa);
        sb.v = sb.v.mul_add(sb.inv_mass, pb);
        sb.w += sb.inv_inertia * self.rb.cross(pb);
    }
}

pub(super) fn warm_start(
    f: &Frame,
    p: &Prepared,
    imp: &JointImpulses,
    sa: &mut BodyState,
    sb: &mut BodyState,
) {
    Ropes::at(f, p, sa, sb).apply(sa, sb, p.ratio, imp.axial);
}

pub(super) fn solve(
    f: &Frame,
    p: &Prepared,
    imp: &mut JointImpulses,
    sa: &mut BodyState,
    sb: &mut BodyState,
    ctx: &JointContext,
    use_bias: bool,
) {
    let r = Ropes::at(f, p, sa, sb);
    // C = total − la − ratio·lb ; Ċ = −ua·vA − ratio·ub·vB.
    let cdot = -r.ua.dot(sa.velocity_at(r.ra)) - p.ratio * r.ub.dot(sb.velocity_at(r.rb));
    let i = if use_bias {
        let c = p.total - r.la - p.ratio * r.lb;
        soft_impulse(p.mass, &ctx.soft, cdot, ctx.soft.bias_rate * c, imp.axial)
    } else {
        soft_impulse(p.mass, &RIGID, cdot, Scalar::ZERO, imp.axial)
    };
    imp.axial += i;
    r.apply(sa, sb, p.ratio, i);
}
