// The page's transports. Both carry what the wasm client hands out:
// a tag byte (0 reliable, 1 datagram) and the message. WebTransport sends
// reliable messages on one bidirectional stream, each framed by a u32 LE
// length like the native stream, and datagrams as WebTransport datagrams;
// the WebSocket sends everything as tagged binary messages, as the server
// expects (server/src/link/websocket.rs).
//
// A transport is { name, send(tagged), close(), onReliable, onDatagram,
// onClose } where the handlers are set by the caller.

const TAG_RELIABLE = 0;
const TAG_DATAGRAM = 1;
const MAX_RELIABLE = 8 << 20;

function hexBytes(hex) {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(i * 2, 2), 16);
  return out;
}

/// WebTransport to the server's UDP port, trusting its short-lived
/// certificate by the hash /api/info gives.
export async function connectWebTransport(info, timeoutMs = 4000) {
  if (typeof WebTransport === "undefined") throw new Error("this browser has no WebTransport");
  const wtInfo = info.webtransport;
  let host = location.hostname;
  // The server binds one address; "localhost" may resolve to the other family.
  if (host === "localhost" && wtInfo.host) host = wtInfo.host;
  const url = `https://${host}:${wtInfo.port}${wtInfo.path}`;
  const wt = new WebTransport(url, {
    serverCertificateHashes: [{ algorithm: "sha-256", value: hexBytes(wtInfo.cert_sha256) }],
  });
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`WebTransport to ${url}: no answer in ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([wt.ready, timeout]);
  } catch (e) {
    try { wt.close(); } catch (_) { /* already failed */ }
    throw e;
  } finally {
    clearTimeout(timer);
  }
  const stream = await wt.createBidirectionalStream();
  const writer = stream.writable.getWriter();
  const datagrams = wt.datagrams.writable.getWriter();
  const t = {
    name: "webtransport",
    onReliable: () => {},
    onDatagram: () => {},
    onClose: () => {},
    send(tagged) {
      const body = tagged.subarray(1);
      if (tagged[0] === TAG_RELIABLE) {
        const frame = new Uint8Array(body.length + 4);
        new DataView(frame.buffer).setUint32(0, body.length, true);
        frame.set(body, 4);
        writer.write(frame).catch(() => {});
      } else {
        datagrams.write(body).catch(() => {});
      }
    },
    close() { try { wt.close({ closeCode: 0, reason: "left" }); } catch (_) { /* closed */ } },
  };
  // The stream: u32 LE length, then the message.
  (async () => {
    const reader = stream.readable.getReader();
    let buf = new Uint8Array(0);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const joined = new Uint8Array(buf.length + value.length);
      joined.set(buf);
      joined.set(value, buf.length);
      buf = joined;
      while (buf.length >= 4) {
        const len = new DataView(buf.buffer, buf.byteOffset, 4).getUint32(0, true);
        if (len > MAX_RELIABLE) { t.onClose(`server sent a message of ${len} bytes`); wt.close(); return; }
        if (buf.length < 4 + len) break;
        t.onReliable(buf.subarray(4, 4 + len));
        buf = buf.subarray(4 + len);
      }
    }
  })().catch(() => {});
  (async () => {
    const reader = wt.datagrams.readable.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      t.onDatagram(value);
    }
  })().catch(() => {});
  wt.closed
    .then((c) => t.onClose(c && c.reason ? c.reason : "connection closed"))
    .catch((e) => t.onClose(`connection lost: ${e && e.message ? e.message : e}`));
  return t;
}

/// A WebSocket to /ws on the page's own host.
export function connectWebSocket(info) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}${info.websocket || "/ws"}`);
  ws.binaryType = "arraybuffer";
  return new Promise((resolve, reject) => {
    const t = {
      name: "websocket",
      onReliable: () => {},
      onDatagram: () => {},
      onClose: () => {},
      send(tagged) { if (ws.readyState === WebSocket.OPEN) ws.send(tagged); },
      close() { ws.close(1000, "left"); },
    };
    ws.onopen = () => resolve(t);
    ws.onerror = () => reject(new Error("WebSocket connection failed"));
    ws.onmessage = (ev) => {
      const b = new Uint8Array(ev.data);
      if (b.length === 0) return;
      if (b[0] === TAG_RELIABLE) t.onReliable(b.subarray(1));
      else if (b[0] === TAG_DATAGRAM) t.onDatagram(b.subarray(1));
    };
    ws.onclose = (ev) => t.onClose(ev.reason || `connection closed (code ${ev.code})`);
  });
}

/// A link conditioner for measurements (`?latency=MS`): holds every
/// message for `ms` in each direction, in order.
export function delayed(t, ms) {
  if (!(ms > 0)) return t;
  const inner = { ...t };
  const later = (f) => (...args) => {
    const copy = args.map((a) => (a instanceof Uint8Array ? a.slice() : a));
    setTimeout(() => f(...copy), ms);
  };
  const out = {
    name: `${t.name}+${ms}ms`,
    onReliable: () => {},
    onDatagram: () => {},
    onClose: () => {},
    send: later((b) => inner.send(b)),
    close: () => inner.close(),
  };
  t.onReliable = later((b) => out.onReliable(b));
  t.onDatagram = later((b) => out.onDatagram(b));
  t.onClose = (r) => out.onClose(r);
  return out;
}

/// WebTransport when the browser has it (unless `prefer` says websocket),
/// the WebSocket otherwise or when WebTransport fails.
export async function connect(info, prefer) {
  const errors = [];
  if (prefer !== "websocket" && typeof WebTransport !== "undefined") {
    try {
      return { transport: await connectWebTransport(info), fallbackReason: null };
    } catch (e) {
      errors.push(String(e && e.message ? e.message : e));
      if (prefer === "webtransport") throw new Error(errors[0]);
    }
  } else if (prefer !== "websocket") {
    errors.push("this browser has no WebTransport");
  }
  const transport = await connectWebSocket(info);
  return { transport, fallbackReason: errors[0] || null };
}
