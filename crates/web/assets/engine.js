// distsync web: the page's engine, behind one small interface that app.js's `api()` calls.
//
//   distsyncEngine.kind                       "server" or "browser"
//   distsyncEngine.request(method, path, body) -> Promise<{status, contentType, body}>
//   distsyncEngine.close(path)                 DELETE sent as the page closes (server only)
//
// "server": the API of `distsync web` over HTTP (same origin), every request carrying this
// page's secret (x-distsync-client), which owns the sessions the page makes.
// "browser": the same API compiled to WebAssembly (crates/web-wasm), answered in a Web Worker
// (assets/worker.js) so a long run or a check never freezes the page; nothing leaves the
// machine. The static build (scripts/build-static.sh) marks its index.html with
// <meta name="distsync-engine" content="browser">; `distsync web` serves it with "server".
"use strict";

const distsyncEngine = (() => {
  const meta = document.querySelector('meta[name="distsync-engine"]');
  const kind = meta && meta.content === "browser" ? "browser" : "server";

  if (kind === "server") {
    const secret = new Uint8Array(16);
    crypto.getRandomValues(secret);
    const client = Array.from(secret, (b) => b.toString(16).padStart(2, "0")).join("");
    return {
      kind,
      async request(method, path, body) {
        const opts = { method, headers: { "x-distsync-client": client } };
        if (body !== undefined) {
          opts.headers["content-type"] = "application/json";
          opts.body = body;
        }
        const r = await fetch(path, opts);
        return { status: r.status, contentType: r.headers.get("content-type") || "", body: await r.text() };
      },
      close(path) {
        // keepalive: the request outlives the page that sends it.
        fetch(path, { method: "DELETE", keepalive: true, headers: { "x-distsync-client": client } }).catch(() => {});
      },
    };
  }

  const worker = new Worker("assets/worker.js");
  const waiting = new Map();
  let next = 1;
  let failed = null;
  const failAll = (message) => {
    failed = message;
    for (const [, w] of waiting) w.reject(new Error(message));
    waiting.clear();
  };
  worker.onmessage = (e) => {
    const m = e.data;
    if (m.fatal) return failAll(m.fatal);
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    w.resolve({ status: m.status, contentType: m.contentType, body: m.body });
  };
  worker.onerror = (e) => failAll("the in-browser engine failed: " + (e.message || "cannot load assets/worker.js"));
  return {
    kind,
    request(method, path, body) {
      if (failed) return Promise.reject(new Error(failed));
      const id = next++;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        worker.postMessage({ id, method, path, body: body === undefined ? "" : body });
      });
    },
    close() {},
  };
})();
