/**
 * The browser's client: a session in a room, plus what drawing it needs.
 */
export class WebClient {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        WebClientFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_webclient_free(ptr, 0);
    }
    /**
     * Bodies in the present world.
     * @returns {number}
     */
    body_count() {
        const ret = wasm.webclient_body_count(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * The world's extent at the last frame: `[min x, min y, max x, max y]`
     * (metres).
     * @returns {Float32Array}
     */
    bounds() {
        const ret = wasm.webclient_bounds(this.__wbg_ptr);
        var v1 = getArrayF32FromWasm0(ret[0], ret[1]).slice();
        wasm.__wbindgen_free(ret[0], ret[1] * 4, 4);
        return v1;
    }
    /**
     * The draw list of the predicted world at `now_ms`, interpolated
     * between the last two ticks (see [`view`]); empty before the first
     * snapshot.
     * @param {number} now_ms
     * @returns {Float32Array}
     */
    frame(now_ms) {
        const ret = wasm.webclient_frame(this.__wbg_ptr, now_ms);
        var v1 = getArrayF32FromWasm0(ret[0], ret[1]).slice();
        wasm.__wbindgen_free(ret[0], ret[1] * 4, 4);
        return v1;
    }
    /**
     * One datagram.
     * @param {number} now_ms
     * @param {Uint8Array | number[]} bytes
     */
    handle_datagram(now_ms, bytes) {
        const val2 = +now_ms;
        const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        wasm.webclient_handle_datagram(this.__wbg_ptr, val2, ptr0, len0);
    }
    /**
     * Bytes of one message from the reliable stream (unframed).
     * @param {number} now_ms
     * @param {Uint8Array | number[]} bytes
     */
    handle_reliable(now_ms, bytes) {
        const val2 = +now_ms;
        const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        wasm.webclient_handle_reliable(this.__wbg_ptr, val2, ptr0, len0);
    }
    /**
     * Runs what is due: ticks (inputs, prediction) and pings.
     * @param {number} now_ms
     */
    handle_timeout(now_ms) {
        wasm.webclient_handle_timeout(this.__wbg_ptr, now_ms);
    }
    /**
     * Why the server closed the session, once it has.
     * @returns {string | undefined}
     */
    kick_reason() {
        const ret = wasm.webclient_kick_reason(this.__wbg_ptr);
        let v1;
        if (ret[0] !== 0) {
            v1 = getStringFromWasm0(ret[0], ret[1]);
            wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
        }
        return v1;
    }
    /**
     * Leaves the room for good (the seat is freed at once).
     */
    leave() {
        wasm.webclient_leave(this.__wbg_ptr);
    }
    /**
     * Starts a session (the hello is queued at once: poll the transmits).
     *
     * `scene` is the server's scene spec and `scene_json` the scene file's
     * text when the spec is a file (both from `/api/info`); `token` is a
     * connect token (its text form) for servers that require one.
     *
     * # Errors
     * The scene cannot be built (see [`scene::rules_for`]).
     * @param {string} scene
     * @param {string | null | undefined} scene_json
     * @param {string} room
     * @param {string} name
     * @param {boolean} spectator
     * @param {string | null | undefined} token
     * @param {number} now_ms
     */
    constructor(scene, scene_json, room, name, spectator, token, now_ms) {
        const val6 = +spectator;
        const val7 = +now_ms;
        let ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3, ptr4, len4;
        try {
            ptr0 = passStringToWasm0(scene, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = isLikeNone(scene_json) ? 0 : passStringToWasm0(scene_json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = passStringToWasm0(room, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len2 = WASM_VECTOR_LEN;
            ptr3 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len3 = WASM_VECTOR_LEN;
            ptr4 = isLikeNone(token) ? 0 : passStringToWasm0(token, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len4 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr4) { wasm.__wbindgen_free(ptr4, len4 * 1, 1); }
            if (ptr3) { wasm.__wbindgen_free(ptr3, len3 * 1, 1); }
            if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.webclient_new(ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3, val6, ptr4, len4, val7);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        WebClientFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * When to call [`WebClient::handle_timeout`] next (ms on the page's
     * clock), or −1 once the session has closed.
     * @returns {number}
     */
    next_timeout_ms() {
        const ret = wasm.webclient_next_timeout_ms(this.__wbg_ptr);
        return ret;
    }
    /**
     * The next event for the page, as JSON: `welcomed` (`slot`, `slots`,
     * `tick_rate`), `synced` (`tick`), `desync` (`tick`, `ours`, `server`)
     * or `kicked` (`reason`, the server's words).
     * @returns {string | undefined}
     */
    poll_event() {
        const ret = wasm.webclient_poll_event(this.__wbg_ptr);
        let v1;
        if (ret[0] !== 0) {
            v1 = getStringFromWasm0(ret[0], ret[1]);
            wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
        }
        return v1;
    }
    /**
     * The next bytes to send: [`TAG_RELIABLE`] or [`TAG_DATAGRAM`], then
     * the message (unframed). A WebSocket sends them as they are; the
     * WebTransport path frames reliable messages on its stream.
     * @returns {Uint8Array | undefined}
     */
    poll_transmit() {
        const ret = wasm.webclient_poll_transmit(this.__wbg_ptr);
        let v1;
        if (ret[0] !== 0) {
            v1 = getArrayU8FromWasm0(ret[0], ret[1]).slice();
            wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
        }
        return v1;
    }
    /**
     * The player's controls from now on: `move_x` in −1 … 1, the buttons,
     * and the aim as a direction (from the avatar toward the pointer).
     * Quantised here, before anything reaches the simulation.
     * @param {number} move_x
     * @param {boolean} jump
     * @param {boolean} grab
     * @param {boolean} _throw
     * @param {number} aim_x
     * @param {number} aim_y
     */
    set_input(move_x, jump, grab, _throw, aim_x, aim_y) {
        wasm.webclient_set_input(this.__wbg_ptr, move_x, jump, grab, _throw, aim_x, aim_y);
    }
    /**
     * The figures of the overlay.
     * @returns {WebStats}
     */
    stats() {
        const ret = wasm.webclient_stats(this.__wbg_ptr);
        return WebStats.__wrap(ret);
    }
}
if (Symbol.dispose) WebClient.prototype[Symbol.dispose] = WebClient.prototype.free;

/**
 * The session's figures for the page's overlay and its tests
 * (`window.bitroom.stats()` adds the transport's name). Counts are `f64`
 * for JavaScript; every one is exact below 2⁵³.
 */
export class WebStats {
    static __wrap(ptr) {
        const obj = Object.create(WebStats.prototype);
        obj.__wbg_ptr = ptr;
        WebStatsFinalization.register(obj, obj.__wbg_ptr, obj);
        return obj;
    }
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        WebStatsFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_webstats_free(ptr, 0);
    }
    /**
     * Payload bytes received.
     * @returns {number}
     */
    get bytes_in() {
        const ret = wasm.__wbg_get_webstats_bytes_in(this.__wbg_ptr);
        return ret;
    }
    /**
     * Payload bytes sent.
     * @returns {number}
     */
    get bytes_out() {
        const ret = wasm.__wbg_get_webstats_bytes_out(this.__wbg_ptr);
        return ret;
    }
    /**
     * Confirmed ticks since that snapshot: the ticks there were to check.
     * @returns {number}
     */
    get confirmed_ticks() {
        const ret = wasm.__wbg_get_webstats_confirmed_ticks(this.__wbg_ptr);
        return ret;
    }
    /**
     * The newest tick confirmed by the server.
     * @returns {number}
     */
    get confirmed() {
        const ret = wasm.__wbg_get_webstats_confirmed(this.__wbg_ptr);
        return ret;
    }
    /**
     * Hash mismatches.
     * @returns {number}
     */
    get desyncs() {
        const ret = wasm.__wbg_get_webstats_desyncs(this.__wbg_ptr);
        return ret;
    }
    /**
     * The latest rollback's depth (ticks).
     * @returns {number}
     */
    get last_rollback() {
        const ret = wasm.__wbg_get_webstats_last_rollback(this.__wbg_ptr);
        return ret;
    }
    /**
     * Deepest rollback (ticks).
     * @returns {number}
     */
    get max_rollback() {
        const ret = wasm.__wbg_get_webstats_max_rollback(this.__wbg_ptr);
        return ret;
    }
    /**
     * Whether the session is in the room and in sync.
     * @returns {boolean}
     */
    get playing() {
        const ret = wasm.__wbg_get_webstats_playing(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * Ticks re-simulated in all.
     * @returns {number}
     */
    get resimulated() {
        const ret = wasm.__wbg_get_webstats_resimulated(this.__wbg_ptr);
        return ret;
    }
    /**
     * Rollbacks (mispredictions re-simulated).
     * @returns {number}
     */
    get rollbacks() {
        const ret = wasm.__wbg_get_webstats_rollbacks(this.__wbg_ptr);
        return ret;
    }
    /**
     * Smoothed round trip (ms).
     * @returns {number}
     */
    get rtt_ms() {
        const ret = wasm.__wbg_get_webstats_rtt_ms(this.__wbg_ptr);
        return ret;
    }
    /**
     * Our seat, or −1 for a spectator (or before the welcome).
     * @returns {number}
     */
    get slot() {
        const ret = wasm.__wbg_get_webstats_slot(this.__wbg_ptr);
        return ret;
    }
    /**
     * Snapshots applied (the join, and resyncs).
     * @returns {number}
     */
    get snapshots() {
        const ret = wasm.__wbg_get_webstats_snapshots(this.__wbg_ptr);
        return ret;
    }
    /**
     * The tick of the first snapshot applied (−1 before it).
     * @returns {number}
     */
    get synced_tick() {
        const ret = wasm.__wbg_get_webstats_synced_tick(this.__wbg_ptr);
        return ret;
    }
    /**
     * The present (predicted) tick.
     * @returns {number}
     */
    get tick() {
        const ret = wasm.__wbg_get_webstats_tick(this.__wbg_ptr);
        return ret;
    }
    /**
     * Confirmed ticks whose state hash matched the server's.
     * @returns {number}
     */
    get verified_ticks() {
        const ret = wasm.__wbg_get_webstats_verified_ticks(this.__wbg_ptr);
        return ret;
    }
    /**
     * Payload bytes received.
     * @param {number} arg0
     */
    set bytes_in(arg0) {
        wasm.__wbg_set_webstats_bytes_in(this.__wbg_ptr, arg0);
    }
    /**
     * Payload bytes sent.
     * @param {number} arg0
     */
    set bytes_out(arg0) {
        wasm.__wbg_set_webstats_bytes_out(this.__wbg_ptr, arg0);
    }
    /**
     * Confirmed ticks since that snapshot: the ticks there were to check.
     * @param {number} arg0
     */
    set confirmed_ticks(arg0) {
        wasm.__wbg_set_webstats_confirmed_ticks(this.__wbg_ptr, arg0);
    }
    /**
     * The newest tick confirmed by the server.
     * @param {number} arg0
     */
    set confirmed(arg0) {
        wasm.__wbg_set_webstats_confirmed(this.__wbg_ptr, arg0);
    }
    /**
     * Hash mismatches.
     * @param {number} arg0
     */
    set desyncs(arg0) {
        wasm.__wbg_set_webstats_desyncs(this.__wbg_ptr, arg0);
    }
    /**
     * The latest rollback's depth (ticks).
     * @param {number} arg0
     */
    set last_rollback(arg0) {
        wasm.__wbg_set_webstats_last_rollback(this.__wbg_ptr, arg0);
    }
    /**
     * Deepest rollback (ticks).
     * @param {number} arg0
     */
    set max_rollback(arg0) {
        wasm.__wbg_set_webstats_max_rollback(this.__wbg_ptr, arg0);
    }
    /**
     * Whether the session is in the room and in sync.
     * @param {boolean} arg0
     */
    set playing(arg0) {
        wasm.__wbg_set_webstats_playing(this.__wbg_ptr, arg0);
    }
    /**
     * Ticks re-simulated in all.
     * @param {number} arg0
     */
    set resimulated(arg0) {
        wasm.__wbg_set_webstats_resimulated(this.__wbg_ptr, arg0);
    }
    /**
     * Rollbacks (mispredictions re-simulated).
     * @param {number} arg0
     */
    set rollbacks(arg0) {
        wasm.__wbg_set_webstats_rollbacks(this.__wbg_ptr, arg0);
    }
    /**
     * Smoothed round trip (ms).
     * @param {number} arg0
     */
    set rtt_ms(arg0) {
        wasm.__wbg_set_webstats_rtt_ms(this.__wbg_ptr, arg0);
    }
    /**
     * Our seat, or −1 for a spectator (or before the welcome).
     * @param {number} arg0
     */
    set slot(arg0) {
        wasm.__wbg_set_webstats_slot(this.__wbg_ptr, arg0);
    }
    /**
     * Snapshots applied (the join, and resyncs).
     * @param {number} arg0
     */
    set snapshots(arg0) {
        wasm.__wbg_set_webstats_snapshots(this.__wbg_ptr, arg0);
    }
    /**
     * The tick of the first snapshot applied (−1 before it).
     * @param {number} arg0
     */
    set synced_tick(arg0) {
        wasm.__wbg_set_webstats_synced_tick(this.__wbg_ptr, arg0);
    }
    /**
     * The present (predicted) tick.
     * @param {number} arg0
     */
    set tick(arg0) {
        wasm.__wbg_set_webstats_tick(this.__wbg_ptr, arg0);
    }
    /**
     * Confirmed ticks whose state hash matched the server's.
     * @param {number} arg0
     */
    set verified_ticks(arg0) {
        wasm.__wbg_set_webstats_verified_ticks(this.__wbg_ptr, arg0);
    }
}
if (Symbol.dispose) WebStats.prototype[Symbol.dispose] = WebStats.prototype.free;
function __wbg_get_imports() {
    const import0 = {
        __proto__: null,
        __wbg___wbindgen_throw_4c88d8bf264fd984: function(arg0, arg1) {
            throw new Error(getStringFromWasm0(arg0, arg1));
        },
        __wbindgen_generic_0000000000000001: function(arg0, arg1) {
            // Cast intrinsic for `Ref(String) -> Externref`.
            const ret = getStringFromWasm0(arg0, arg1);
            return ret;
        },
        __wbindgen_init_externref_table: function() {
            const table = wasm.__wbindgen_externrefs;
            table.set(0, undefined);
            table.set(1024, undefined);
            table.set(1025, null);
            table.set(1026, true);
            table.set(1027, false);
        },
    };
    return {
        __proto__: null,
        "./bitroom_web_bg.js": import0,
    };
}

const WebClientFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_webclient_free(ptr, 1));
const WebStatsFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_webstats_free(ptr, 1));

function getArrayF32FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getFloat32ArrayMemory0().subarray(ptr / 4, ptr / 4 + len);
}

function getArrayU8FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getUint8ArrayMemory0().subarray(ptr / 1, ptr / 1 + len);
}

let cachedFloat32ArrayMemory0 = null;
function getFloat32ArrayMemory0() {
    if (cachedFloat32ArrayMemory0 === null || cachedFloat32ArrayMemory0.byteLength === 0) {
        cachedFloat32ArrayMemory0 = new Float32Array(wasm.memory.buffer);
    }
    return cachedFloat32ArrayMemory0;
}

function getStringFromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return decodeText(getUint8ArrayMemory0().subarray(ptr, ptr + len));
}

let cachedUint8ArrayMemory0 = null;
function getUint8ArrayMemory0() {
    if (cachedUint8ArrayMemory0 === null || cachedUint8ArrayMemory0.byteLength === 0) {
        cachedUint8ArrayMemory0 = new Uint8Array(wasm.memory.buffer);
    }
    return cachedUint8ArrayMemory0;
}

function isLikeNone(x) {
    return x === undefined || x === null;
}

function passArray8ToWasm0(arg, malloc) {
    const ptr = malloc(arg.length * 1, 1) >>> 0;
    getUint8ArrayMemory0().set(arg, ptr / 1);
    WASM_VECTOR_LEN = arg.length;
    return ptr;
}

function passStringToWasm0(arg, malloc, realloc) {
    if (realloc === undefined) {
        const buf = cachedTextEncoder.encode(arg);
        const ptr = malloc(buf.length, 1) >>> 0;
        getUint8ArrayMemory0().subarray(ptr, ptr + buf.length).set(buf);
        WASM_VECTOR_LEN = buf.length;
        return ptr;
    }

    let len = arg.length;
    let ptr = malloc(len, 1) >>> 0;

    const mem = getUint8ArrayMemory0();

    let offset = 0;

    for (; offset < len; offset++) {
        const code = arg.charCodeAt(offset);
        if (code > 0x7F) break;
        mem[ptr + offset] = code;
    }
    if (offset !== len) {
        if (offset !== 0) {
            arg = arg.slice(offset);
        }
        ptr = realloc(ptr, len, len = offset + arg.length * 3, 1) >>> 0;
        const view = getUint8ArrayMemory0().subarray(ptr + offset, ptr + len);
        const ret = cachedTextEncoder.encodeInto(arg, view);

        offset += ret.written;
        ptr = realloc(ptr, len, offset, 1) >>> 0;
    }

    WASM_VECTOR_LEN = offset;
    return ptr;
}

function takeFromExternrefTable0(idx) {
    const value = wasm.__wbindgen_externrefs.get(idx);
    wasm.__externref_table_dealloc(idx);
    return value;
}

let cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
cachedTextDecoder.decode();
const MAX_SAFARI_DECODE_BYTES = 2146435072;
let numBytesDecoded = 0;
function decodeText(bytes) {
    numBytesDecoded += bytes.length;
    if (numBytesDecoded >= MAX_SAFARI_DECODE_BYTES) {
        cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
        cachedTextDecoder.decode();
        numBytesDecoded = bytes.length;
    }
    return cachedTextDecoder.decode(bytes);
}

const cachedTextEncoder = new TextEncoder();

if (!('encodeInto' in cachedTextEncoder)) {
    cachedTextEncoder.encodeInto = function (arg, view) {
        const buf = cachedTextEncoder.encode(arg);
        view.set(buf);
        return {
            read: arg.length,
            written: buf.length
        };
    };
}

let WASM_VECTOR_LEN = 0;

let wasmModule, wasmInstance, wasm;
function __wbg_finalize_init(instance, module) {
    wasmInstance = instance;
    wasm = instance.exports;
    wasmModule = module;
    cachedFloat32ArrayMemory0 = null;
    cachedUint8ArrayMemory0 = null;
    wasm.__wbindgen_start();
    return wasm;
}

async function __wbg_load(module, imports) {
    if (typeof Response === 'function' && module instanceof Response) {
        if (!module.ok) {
            throw new Error(`failed to fetch Wasm: ${module.status} ${module.statusText} fetching '${module.url}'`);
        }

        if (typeof WebAssembly.instantiateStreaming === 'function') {
            try {
                return await WebAssembly.instantiateStreaming(module, imports);
            } catch (e) {
                const validResponse = expectedResponseType(module.type);

                if (validResponse && module.headers.get('Content-Type') !== 'application/wasm') {
                    console.warn("`WebAssembly.instantiateStreaming` failed because your server does not serve Wasm with `application/wasm` MIME type. Falling back to `WebAssembly.instantiate` which is slower. Original error:\n", e);

                } else { throw e; }
            }
        }

        const bytes = await module.arrayBuffer();
        return await WebAssembly.instantiate(bytes, imports);
    } else {
        const instance = await WebAssembly.instantiate(module, imports);

        if (instance instanceof WebAssembly.Instance) {
            return { instance, module };
        } else {
            return instance;
        }
    }

    function expectedResponseType(type) {
        switch (type) {
            case 'basic': case 'cors': case 'default': return true;
        }
        return false;
    }
}

function initSync(module) {
    if (wasm !== undefined) return wasm;


    if (module !== undefined) {
        if (Object.getPrototypeOf(module) === Object.prototype) {
            ({module} = module)
        } else {
            console.warn('using deprecated parameters for `initSync()`; pass a single object instead')
        }
    }

    const imports = __wbg_get_imports();
    if (!(module instanceof WebAssembly.Module)) {
        module = new WebAssembly.Module(module);
    }
    const instance = new WebAssembly.Instance(module, imports);
    return __wbg_finalize_init(instance, module);
}

let __wbg_init_promise;
async function __wbg_init(module_or_path) {
    if (wasm !== undefined) return wasm;
    if (__wbg_init_promise === undefined) {
        __wbg_init_promise = __wbg_init_once(module_or_path);
        __wbg_init_promise.catch(() => { __wbg_init_promise = undefined; });
    }
    return __wbg_init_promise;
}

async function __wbg_init_once(module_or_path) {

    if (module_or_path !== undefined) {
        if (Object.getPrototypeOf(module_or_path) === Object.prototype) {
            ({module_or_path} = module_or_path)
        } else {
            console.warn('using deprecated parameters for the initialization function; pass a single object instead')
        }
    }

    if (module_or_path === undefined) {
        module_or_path = new URL('bitroom_web_bg.wasm', import.meta.url);
    }
    const imports = __wbg_get_imports();

    if (typeof module_or_path === 'string' || (typeof Request === 'function' && module_or_path instanceof Request) || (typeof URL === 'function' && module_or_path instanceof URL)) {
        module_or_path = fetch(module_or_path);
    }

    const { instance, module } = await __wbg_load(await module_or_path, imports);

    return __wbg_finalize_init(instance, module);
}

export { initSync, __wbg_init as default };
