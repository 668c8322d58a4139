// The bitroom page: the room list, or (with ?room=NAME) a room, played or
// watched. The wasm client (bitroom_web.js, built by web/build.sh) holds
// the session; this file owns the clock, the timers, the transport, the
// input events and the canvas, and moves bytes and figures between them.
//
// Test contract: /?room=NAME joins as a player, &spectate=1 as a spectator,
// &token=T passes a connect token; &transport=websocket|webtransport
// chooses the transport; &latency=MS delays every message by MS each way
// (for measurements); &name=N sets the name. window.bitroom.stats() returns
// {slot, tick, verified_ticks, desyncs, rollbacks, rtt_ms, transport, ...}.

import init, { WebClient } from "./bitroom_web.js";
import { connect, delayed } from "./transport.js";
import { Renderer } from "./render.js";
import { Controls } from "./input.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const errors = () => window.__bitroomErrors.slice();

function banner(text, kind) {
  const b = $("banner");
  b.textContent = text;
  b.className = "banner" + (kind ? " " + kind : "");
  b.hidden = !text;
}

function badge(text, kind) {
  const s = document.createElement("span");
  s.className = "badge" + (kind ? " " + kind : "");
  s.textContent = text;
  $("badges").appendChild(s);
  return s;
}

async function getJson(path) {
  const r = await fetch(path, { cache: "no-store" });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

// Room names, seat → name, refreshed from /api/rooms.
async function seatNames(room) {
  const names = new Map();
  try {
    const list = await getJson("/api/rooms");
    const r = list.rooms.find((x) => x.name === room);
    if (r) for (const p of r.players) names.set(p.slot, p.name);
  } catch (_) { /* keep the old names */ }
  return names;
}

// ---------------------------------------------------------------- lobby

async function lobby(info) {
  $("lobby").hidden = false;
  $("lobby-scene").textContent =
    `Scene ${info.scene}, ${info.tick_rate} ticks per second, up to ${info.max_players} players a room.`;
  const go = (spectate) => {
    const room = $("join-room").value.trim();
    if (!room) return;
    const q = new URLSearchParams({ room });
    const name = $("join-name").value.trim();
    if (name) q.set("name", name);
    if (spectate) q.set("spectate", "1");
    location.search = q.toString();
  };
  $("join-form").addEventListener("submit", (e) => { e.preventDefault(); go(false); });
  $("join-watch").addEventListener("click", () => go(true));
  const refresh = async () => {
    let list;
    try { list = await getJson("/api/rooms"); } catch (e) { return; }
    const body = $("room-list");
    body.replaceChildren();
    if (list.rooms.length === 0) {
      const tr = body.insertRow();
      const td = tr.insertCell();
      td.colSpan = 5;
      td.className = "muted";
      td.textContent = "No rooms yet: name one below to open it.";
    }
    for (const r of list.rooms) {
      const tr = body.insertRow();
      tr.insertCell().textContent = r.name;
      tr.insertCell().textContent =
        `${r.player_count}` + (r.players.length ? ` (${r.players.map((p) => p.name).join(", ")})` : "");
      tr.insertCell().textContent = String(r.spectators);
      tr.insertCell().textContent = String(r.tick);
      const links = tr.insertCell();
      const play = document.createElement("a");
      play.href = "?" + new URLSearchParams({ room: r.name });
      play.textContent = "play";
      const watch = document.createElement("a");
      watch.href = "?" + new URLSearchParams({ room: r.name, spectate: "1" });
      watch.textContent = "watch";
      links.append(play, watch);
    }
  };
  await refresh();
  setInterval(refresh, 2000);
}

// ----------------------------------------------------------------- room

async function room(info, roomName) {
  const spectate = params.get("spectate") === "1";
  const name = (params.get("name") || `web-${Math.floor(Math.random() * 9000 + 1000)}`).slice(0, 32);
  const latency = Number(params.get("latency") || 0);
  $("game").hidden = false;
  $("room-title").textContent = roomName;
  badge(spectate ? "watching" : "playing");
  if (spectate) $("help").textContent = "Watching: no seat, the same checks.";

  const share = $("share");
  // A token is spent once: with tokens and no minting here, a bare link
  // would not get in.
  share.hidden = Boolean(info.tokens_required && !info.token_endpoint);
  share.addEventListener("click", async () => {
    const link = `${location.origin}/?${new URLSearchParams({ room: roomName })}`;
    try {
      await navigator.clipboard.writeText(link);
      share.textContent = "Link copied";
    } catch (_) {
      window.prompt("Link to this room", link);
    }
    setTimeout(() => { share.textContent = "Share link"; }, 1500);
  });

  await init();
  const sceneJson = info.scene_file ? await (await fetch("/api/scene")).text() : undefined;
  let token = params.get("token") || undefined;
  if (!token && info.tokens_required) {
    // A server that is its own backend (the demo) mints one for the page;
    // elsewhere the game's backend puts it in the link.
    if (!info.token_endpoint) {
      throw new Error("This server requires a connect token: open the link your game gave you (…&token=…).");
    }
    const q = new URLSearchParams({ room: roomName, spectate: spectate ? "1" : "0" });
    const r = await fetch(`/api/token?${q}`);
    if (!r.ok) throw new Error(`No token for this room: ${(await r.text()).trim()}`);
    token = (await r.text()).trim();
  }
  const client = new WebClient(info.scene, sceneJson, roomName, name, spectate, token, performance.now());

  const canvas = $("view");
  const renderer = new Renderer(canvas);
  const controls = new Controls(canvas, renderer);
  let names = new Map();
  let closed = null;
  let transport;
  let fallback = null;
  try {
    ({ transport, fallbackReason: fallback } = await connect(info, params.get("transport")));
  } catch (e) {
    banner(`Cannot connect: ${e.message}`);
    throw e;
  }
  transport = delayed(transport, latency);
  const transportBadge = badge(transport.name, "ok");
  if (fallback) transportBadge.title = `WebTransport unavailable: ${fallback}`;

  // Move the session's output to the transport; handle its events.
  const flush = () => {
    let t;
    while ((t = client.poll_transmit())) transport.send(t);
    let e;
    while ((e = client.poll_event())) {
      const ev = JSON.parse(e);
      if (ev.type === "kicked") {
        closed = ev.reason;
        banner(`The server closed the session: ${ev.reason}`);
      } else if (ev.type === "desync") {
        console.warn(`desync at tick ${ev.tick}: ours ${ev.ours}, server ${ev.server} (resyncing)`);
      } else if (ev.type === "synced") {
        banner("");
      }
    }
  };

  // The session's timer.
  let timer = 0;
  const schedule = () => {
    clearTimeout(timer);
    const due = client.next_timeout_ms();
    if (due < 0) return;
    timer = setTimeout(onTimer, Math.max(0, due - performance.now()));
  };
  const onTimer = () => {
    client.handle_timeout(performance.now());
    flush();
    schedule();
  };
  transport.onReliable = (b) => { client.handle_reliable(performance.now(), b); flush(); schedule(); };
  transport.onDatagram = (b) => { client.handle_datagram(performance.now(), b); flush(); schedule(); };
  transport.onClose = (reason) => {
    clearTimeout(timer);
    if (!closed) {
      closed = client.kick_reason() || reason;
      banner(`Disconnected: ${closed}`);
    }
  };
  flush();
  schedule();
  banner("Joining…", "info");
  window.addEventListener("beforeunload", () => { client.leave(); flush(); });

  // Figures: bandwidth once a second, frame times per frame.
  let bw = { at: performance.now(), inB: 0, outB: 0, down: 0, up: 0 };
  const frameMs = new Float64Array(600);
  const workMs = new Float64Array(600);
  let frames = 0;
  let lastFrameAt = 0;
  let firstFrameMs = null;

  const overlay = () => {
    const s = client.stats();
    const now = performance.now();
    if (now - bw.at >= 1000) {
      const dt = (now - bw.at) / 1000;
      bw = {
        at: now,
        inB: s.bytes_in,
        outB: s.bytes_out,
        down: ((s.bytes_in - bw.inB) * 8) / 1000 / dt,
        up: ((s.bytes_out - bw.outB) * 8) / 1000 / dt,
      };
    }
    const set = (id, text, cls) => { const el = $(id); el.textContent = text; el.className = cls || ""; };
    set("o-transport", transport.name);
    set("o-slot", s.slot >= 0 ? `${s.slot}` : "spectator");
    set("o-tick", `${s.tick} (confirmed ${s.confirmed})`);
    const pct = s.confirmed_ticks > 0 ? (100 * s.verified_ticks) / s.confirmed_ticks : 0;
    set("o-verified", `${s.verified_ticks} (${pct.toFixed(1)} %)`, s.verified_ticks > 0 ? "ok" : "");
    set("o-desyncs", `${s.desyncs}`, s.desyncs > 0 ? "bad" : "ok");
    set("o-rtt", `${s.rtt_ms.toFixed(1)} ms`);
    set("o-rollbacks", `${s.rollbacks}`);
    set("o-depth", `${s.last_rollback} / ${s.max_rollback}`);
    set("o-bw", `${bw.down.toFixed(0)} / ${bw.up.toFixed(0)} kbit/s`);
    set("o-bodies", `${client.body_count()}`);
    const f = frameStats();
    set("o-frame", f.frames ? `${f.fps.toFixed(0)} fps, ${f.work_p50.toFixed(1)} ms` : "–");
  };

  const quantile = (arr, n, q) => {
    const a = Array.from(arr.subarray(0, n)).sort((x, y) => x - y);
    return a.length ? a[Math.min(a.length - 1, Math.floor(q * a.length))] : 0;
  };
  function frameStats() {
    const n = Math.min(frames, frameMs.length);
    const p50 = quantile(frameMs, n, 0.5);
    let span = 0;
    for (let i = 0; i < n; i++) span += frameMs[i];
    return {
      frames,
      // Frames drawn per second over the window (not 1000 / p50: a page
      // stalling now and then has a fast median and a low frame rate).
      fps: span > 0 ? n * 1000 / span : 0,
      interval_p50: p50,
      interval_p99: quantile(frameMs, n, 0.99),
      work_p50: quantile(workMs, n, 0.5),
      work_p99: quantile(workMs, n, 0.99),
      over_budget: Array.from(frameMs.subarray(0, n)).filter((x) => x > 1000 / 60 * 1.5).length,
      window: n,
      first_frame_ms: firstFrameMs,
    };
  }

  let lastOverlay = 0;
  let lastInput = "";
  const frame = (now) => {
    const t0 = performance.now();
    renderer.resize();
    const me = client.stats().slot;
    if (!spectate && me >= 0 && controls.changed) {
      const c = controls.read(renderer.avatar(me));
      const key = JSON.stringify(c);
      if (key !== lastInput) {
        client.set_input(c.move, c.jump, c.grab, c.throw, c.aim[0], c.aim[1]);
        lastInput = key;
      }
    }
    const list = client.frame(t0);
    if (list.length) {
      if (firstFrameMs === null) firstFrameMs = t0;
      renderer.fit(client.bounds());
    }
    const aim = me >= 0 ? controls.read(renderer.avatar(me)).aim : null;
    renderer.draw(list, names, me, aim);
    const t1 = performance.now();
    if (lastFrameAt) {
      frameMs[frames % frameMs.length] = now - lastFrameAt;
      workMs[frames % workMs.length] = t1 - t0;
      frames++;
    }
    lastFrameAt = now;
    if (t1 - lastOverlay > 250) { overlay(); lastOverlay = t1; }
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  const refreshNames = async () => { names = await seatNames(roomName); };
  refreshNames();
  setInterval(refreshNames, 2000);

  window.bitroom = {
    stats() {
      const s = client.stats();
      return {
        slot: s.slot,
        tick: s.tick,
        verified_ticks: s.verified_ticks,
        desyncs: s.desyncs,
        rollbacks: s.rollbacks,
        rtt_ms: s.rtt_ms,
        transport: transport.name,
        confirmed: s.confirmed,
        confirmed_ticks: s.confirmed_ticks,
        synced_tick: s.synced_tick,
        max_rollback: s.max_rollback,
        resimulated: s.resimulated,
        snapshots: s.snapshots,
        playing: s.playing,
        bodies: client.body_count(),
        closed,
        fallback,
        frames: frameStats(),
      };
    },
    errors,
  };
}

// ----------------------------------------------------------------- start

async function main() {
  window.bitroom = { stats: () => null, errors };
  let info;
  try {
    info = await getJson("/api/info");
  } catch (e) {
    banner(`Cannot reach the server: ${e.message}`);
    return;
  }
  const roomName = params.get("room");
  if (roomName) await room(info, roomName);
  else await lobby(info);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  banner(String(e && e.message ? e.message : e));
});
