// Keyboard, mouse and touch → the player's controls: a move axis, jump,
// grab, throw, and the pointer in world metres (the aim is from the avatar
// toward it). No game logic: the wasm quantises these into PlayerInput.

export class Controls {
  constructor(canvas, renderer) {
    this.canvas = canvas;
    this.renderer = renderer;
    this.keys = new Set();
    this.buttons = { grab: false, throw: false };
    this.touchKeys = new Set();
    this.pointer = null; // world [x, y]
    this.changed = true;
    const down = (e) => {
      if (e.target instanceof HTMLInputElement) return;
      const k = e.key.toLowerCase();
      if (["arrowleft", "arrowright", "arrowup", " ", "a", "d", "w", "j", "k", "e"].includes(k)) {
        e.preventDefault();
        this.keys.add(k);
        this.changed = true;
      }
    };
    const up = (e) => { this.keys.delete(e.key.toLowerCase()); this.changed = true; };
    window.addEventListener("keydown", down);
    window.addEventListener("keyup", up);
    window.addEventListener("blur", () => { this.keys.clear(); this.buttons.grab = this.buttons.throw = false; this.changed = true; });
    const at = (e) => {
      const r = canvas.getBoundingClientRect();
      const dpr = window.devicePixelRatio || 1;
      this.pointer = renderer.toWorld((e.clientX - r.left) * dpr, (e.clientY - r.top) * dpr);
      this.changed = true;
    };
    canvas.addEventListener("contextmenu", (e) => e.preventDefault());
    canvas.addEventListener("pointermove", at);
    canvas.addEventListener("pointerdown", (e) => {
      at(e);
      canvas.setPointerCapture(e.pointerId);
      if (e.button === 2) this.buttons.throw = true;
      else this.buttons.grab = true;
      this.changed = true;
    });
    const release = (e) => {
      if (e.button === 2) this.buttons.throw = false;
      else this.buttons.grab = false;
      this.changed = true;
    };
    canvas.addEventListener("pointerup", release);
    canvas.addEventListener("pointercancel", release);
    // On-screen buttons for touch screens.
    const touch = document.getElementById("touch");
    if (touch && ("ontouchstart" in window || navigator.maxTouchPoints > 0)) {
      touch.hidden = false;
      for (const b of touch.querySelectorAll("button")) {
        const key = b.dataset.key;
        b.addEventListener("pointerdown", (e) => { e.preventDefault(); this.touchKeys.add(key); this.changed = true; });
        const off = () => { this.touchKeys.delete(key); this.changed = true; };
        b.addEventListener("pointerup", off);
        b.addEventListener("pointerleave", off);
        b.addEventListener("pointercancel", off);
      }
    }
  }

  // The controls now: { move, jump, grab, throw, aim: [dx, dy] } given our
  // avatar's centre (or null).
  read(avatar) {
    const k = this.keys, t = this.touchKeys;
    const left = k.has("a") || k.has("arrowleft") || t.has("left");
    const right = k.has("d") || k.has("arrowright") || t.has("right");
    let aim = [1, 0.35];
    if (this.pointer && avatar) aim = [this.pointer[0] - avatar[0], this.pointer[1] - avatar[1]];
    return {
      move: (right ? 1 : 0) - (left ? 1 : 0),
      jump: k.has("w") || k.has("arrowup") || k.has(" ") || t.has("jump"),
      grab: this.buttons.grab || k.has("j"),
      throw: this.buttons.throw || k.has("k") || k.has("e") || t.has("throw"),
      aim,
    };
  }
}
