//! Where serde is: a thread-local cursor that the list visitors update, so
//! that serde's own errors can name the body and shape being read.

use super::*;

#[derive(Clone, Copy, Debug)]
pub(super) enum Path {
    Scene,
    World,
    Body(usize),
    Shape(usize, usize),
    Joint(usize),
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Cursor {
    pub(super) path: Path,
    pub(super) shapes: usize,
    pub(super) limit: Option<(&'static str, usize)>,
}

pub(super) const CURSOR_START: Cursor = Cursor {
    path: Path::Scene,
    shapes: 0,
    limit: None,
};

thread_local! {
    static CURSOR: Cell<Cursor> = const { Cell::new(CURSOR_START) };
}

pub(super) fn cursor() -> Cursor {
    CURSOR.with(Cell::get)
}

pub(super) fn set_cursor(c: Cursor) {
    CURSOR.with(|cell| cell.set(c));
}

pub(super) fn set_path(path: Path) {
    set_cursor(Cursor { path, ..cursor() });
}
