//! Stage **sleep**: after the end-of-step collision, islands of bodies
//! solved this step that stayed slow long enough fall asleep (see `island`).

use crate::dynamics::island;
use crate::dynamics::world::World;

impl World {
    /// Islands of bodies solved this step that stayed slow long enough fall
    /// asleep.
    pub(super) fn sleep(&mut self) {
        let st = &mut self.state;
        let sc = &mut self.scratch;
        if !st.settings.enable_sleep || sc.awake.is_empty() {
            return;
        }
        island::update_sleep(
            st,
            &sc.awake,
            &sc.links,
            &mut sc.parent,
            &mut sc.min_time,
            &mut sc.min_index,
        );
    }
}
