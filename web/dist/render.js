// Draws the wasm client's draw list (web/src/view.rs) on a 2D canvas:
// records of numbers, [kind, style, ...]. Shapes of one style share one
// path, so a 1000-body room is a handful of fill calls.

const POLYGON = 0, CIRCLE = 1, CAPSULE = 2, SEGMENT = 3, JOINT = 4, PLAYER = 5;
const STATIC = 0, KINEMATIC = 1, AWAKE = 2, ASLEEP = 3, HELD = 4, AVATAR = 16;

export const PLAYER_COLORS = [
  "#5ec2b7", "#e5a55d", "#b48ead", "#88c0d0", "#e26d6d", "#a3be8c", "#ebcb8b", "#d08770",
];

function styleOf(style) {
  switch (style) {
    case STATIC: return { fill: "#2b3342", stroke: "#3d4658" };
    case KINEMATIC: return { fill: "#34507a", stroke: "#5a7bb0" };
    case AWAKE: return { fill: "#4a5a78", stroke: "#7c8fb5" };
    case ASLEEP: return { fill: "#323b4e", stroke: "#4b566c" };
    case HELD: return { fill: "#8c7a45", stroke: "#ebcb8b" };
    default: {
      const c = PLAYER_COLORS[(style - AVATAR) % PLAYER_COLORS.length];
      return { fill: c, stroke: "#f2f4f8" };
    }
  }
}

export class Renderer {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d", { alpha: false });
    this.view = null; // { cx, cy, scale }
    this.players = [];
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(this.canvas.clientWidth * dpr));
    const h = Math.max(1, Math.round(this.canvas.clientHeight * dpr));
    if (this.canvas.width !== w || this.canvas.height !== h) {
      this.canvas.width = w;
      this.canvas.height = h;
      this.view = null;
    }
  }

  // Fits the world's extent (metres, y up) into the canvas, once; the
  // arena does not move.
  fit(bounds) {
    if (this.view || !bounds || bounds.length < 4 || !(bounds[2] > bounds[0])) return;
    const [x0, y0, x1, y1] = bounds;
    const w = this.canvas.width, h = this.canvas.height;
    const margin = 1.06;
    const scale = Math.min(w / ((x1 - x0) * margin), h / ((y1 - y0) * margin));
    this.view = { cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, scale };
  }

  // Canvas pixel → world metres.
  toWorld(px, py) {
    if (!this.view) return [0, 0];
    const { cx, cy, scale } = this.view;
    return [(px - this.canvas.width / 2) / scale + cx, -(py - this.canvas.height / 2) / scale + cy];
  }

  // Draws `list`; `names` maps a slot to a name, `me` is our slot (-1: none).
  draw(list, names, me, aim) {
    const ctx = this.ctx;
    const w = this.canvas.width, h = this.canvas.height;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = "#0f1218";
    ctx.fillRect(0, 0, w, h);
    if (!this.view) return;
    const { cx, cy, scale } = this.view;
    this.grid(cx, cy, scale, w, h);
    ctx.setTransform(scale, 0, 0, -scale, w / 2 - cx * scale, h / 2 + cy * scale);
    const px = 1 / scale;
    ctx.lineJoin = "round";
    let path = null, style = -1;
    const flush = () => {
      if (!path) return;
      const s = styleOf(style);
      ctx.fillStyle = s.fill;
      ctx.fill(path);
      ctx.strokeStyle = s.stroke;
      ctx.lineWidth = (style >= AVATAR ? 2 : 1) * px;
      ctx.stroke(path);
      path = null;
    };
    const joints = [];
    const players = [];
    let i = 0;
    const n = list.length;
    while (i < n) {
      const kind = list[i];
      if (kind === JOINT) { joints.push(list.subarray(i + 2, i + 6)); i += 6; continue; }
      if (kind === PLAYER) { players.push([list[i + 1], list[i + 2], list[i + 3]]); i += 4; continue; }
      const st = list[i + 1];
      if (st !== style) { flush(); style = st; }
      if (!path) path = new Path2D();
      switch (kind) {
        case POLYGON: {
          const count = list[i + 2];
          const r = list[i + 3];
          const base = i + 4;
          path.moveTo(list[base], list[base + 1]);
          for (let k = 1; k < count; k++) path.lineTo(list[base + 2 * k], list[base + 2 * k + 1]);
          path.closePath();
          if (r > 0) {
            // Rounded polygons: a disc at each corner approximates the rim.
            for (let k = 0; k < count; k++) {
              path.moveTo(list[base + 2 * k] + r, list[base + 2 * k + 1]);
              path.arc(list[base + 2 * k], list[base + 2 * k + 1], r, 0, Math.PI * 2);
            }
          }
          i = base + 2 * count;
          break;
        }
        case CIRCLE: {
          const x = list[i + 2], y = list[i + 3], r = list[i + 4];
          path.moveTo(x + r, y);
          path.arc(x, y, r, 0, Math.PI * 2);
          path.moveTo(x, y);
          path.lineTo(list[i + 5], list[i + 6]);
          i += 7;
          break;
        }
        case CAPSULE: {
          const x1 = list[i + 2], y1 = list[i + 3], x2 = list[i + 4], y2 = list[i + 5], r = list[i + 6];
          const a = Math.atan2(y2 - y1, x2 - x1);
          path.moveTo(x2 + r * Math.cos(a - Math.PI / 2), y2 + r * Math.sin(a - Math.PI / 2));
          path.arc(x2, y2, r, a - Math.PI / 2, a + Math.PI / 2);
          path.arc(x1, y1, r, a + Math.PI / 2, a + Math.PI * 1.5);
          path.closePath();
          i += 7;
          break;
        }
        case SEGMENT: {
          path.moveTo(list[i + 2], list[i + 3]);
          path.lineTo(list[i + 4], list[i + 5]);
          i += 6;
          break;
        }
        default:
          i = n; // unknown: stop rather than misread the rest
      }
    }
    flush();
    // Joints (the grab of a carried body) as dashed lines.
    if (joints.length) {
      ctx.strokeStyle = "#ebcb8b";
      ctx.lineWidth = 1.5 * px;
      ctx.setLineDash([4 * px, 3 * px]);
      ctx.beginPath();
      for (const j of joints) { ctx.moveTo(j[0], j[1]); ctx.lineTo(j[2], j[3]); }
      ctx.stroke();
      ctx.setLineDash([]);
    }
    // Our aim.
    for (const [slot, x, y] of players) {
      if (slot === me && aim) {
        const len = Math.hypot(aim[0], aim[1]) || 1;
        ctx.strokeStyle = "rgba(242, 244, 248, 0.55)";
        ctx.lineWidth = 1.5 * px;
        ctx.beginPath();
        ctx.moveTo(x + (aim[0] / len) * 0.7, y + (aim[1] / len) * 0.7);
        ctx.lineTo(x + (aim[0] / len) * 1.9, y + (aim[1] / len) * 1.9);
        ctx.stroke();
      }
    }
    // Names, in screen space so the text is upright and crisp.
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    const dpr = window.devicePixelRatio || 1;
    ctx.font = `${Math.round(12 * dpr)}px ui-sans-serif, system-ui, sans-serif`;
    ctx.textAlign = "center";
    for (const [slot, x, y] of players) {
      const sx = w / 2 + (x - cx) * scale;
      const sy = h / 2 - (y - cy) * scale - 1.1 * scale;
      const label = (names.get(slot) || `player ${slot}`) + (slot === me ? " (you)" : "");
      ctx.fillStyle = "rgba(15, 18, 24, 0.7)";
      const tw = ctx.measureText(label).width;
      ctx.fillRect(sx - tw / 2 - 4 * dpr, sy - 12 * dpr, tw + 8 * dpr, 16 * dpr);
      ctx.fillStyle = PLAYER_COLORS[slot % PLAYER_COLORS.length];
      ctx.fillText(label, sx, sy);
    }
    this.players = players;
  }

  grid(cx, cy, scale, w, h) {
    const ctx = this.ctx;
    const step = 2; // metres
    const x0 = cx - w / 2 / scale, x1 = cx + w / 2 / scale;
    const y0 = cy - h / 2 / scale, y1 = cy + h / 2 / scale;
    ctx.strokeStyle = "#161b25";
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let x = Math.ceil(x0 / step) * step; x <= x1; x += step) {
      const sx = Math.round(w / 2 + (x - cx) * scale) + 0.5;
      ctx.moveTo(sx, 0); ctx.lineTo(sx, h);
    }
    for (let y = Math.ceil(y0 / step) * step; y <= y1; y += step) {
      const sy = Math.round(h / 2 - (y - cy) * scale) + 0.5;
      ctx.moveTo(0, sy); ctx.lineTo(w, sy);
    }
    ctx.stroke();
  }

  // Our avatar's centre in the last frame (world metres), or null.
  avatar(me) {
    for (const [slot, x, y] of this.players) if (slot === me) return [x, y];
    return null;
  }
}
